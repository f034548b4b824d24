//go:build !amd64

package store

// dot is the dot product of a and b (as long as a): dotGo, where dotFMA
// is not built.
func dot(a, b []float32) float32 { return dotGo(a, b) }

// dotHalf is the dot product of a and the binary16s h (as long as a):
// dotHalfGo, where dotHalfF16C is not built.
func dotHalf(a []float32, h []uint16) float32 { return dotHalfGo(a, h) }

// halfEncode is halfEncodeGo, where halfEncodeF16C is not built.
func halfEncode(v []float32, h []uint16, scale float32) (diff2, norm2, half2 float64) {
	return halfEncodeGo(v, h, scale)
}
