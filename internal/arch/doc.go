// Package arch has no code. Its test holds the structural claims of
// docs/ARCHITECTURE.md to the code: which package may import which, and
// that the package map there names every package there is.
package arch
