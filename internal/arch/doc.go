// Package arch has no code. Its tests hold the structural claims of
// docs/ARCHITECTURE.md to the code: which package may import which, that
// the package map there names every package there is, that one file
// starts a turn, and that every test, file and Go name the doc names
// exists.
package arch
