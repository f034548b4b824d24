//go:build !amd64

package store

// dot is the dot product of a and b (as long as a): dotGo, where dotFMA
// is not built.
func dot(a, b []float32) float32 { return dotGo(a, b) }
