package store

import "golang.org/x/sys/cpu"

// hasFMA: the CPU has AVX2 and FMA3 (x86-64-v3), which dotFMA uses.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasF16C: the CPU also converts binary16 (F16C), which dotHalfF16C uses.
var hasF16C = hasFMA && cpu.X86.HasF16C

// dot is the dot product of a and b (as long as a): dotFMA's eight-wide
// fused multiply-adds where the CPU has them, 2× dotGo over 100k vectors
// of 768 dimensions on this machine (BenchmarkDot; the loop reads 300 MB,
// so memory, not arithmetic, bounds it next), else dotGo.
func dot(a, b []float32) float32 {
	if hasFMA {
		return dotFMA(a, b[:len(a)])
	}
	return dotGo(a, b)
}

// dotFMA is dot in AVX2 and FMA3 (dot_amd64.s): four running sums of
// eight floats each, then the rest one float at a time. b is at least as
// long as a.
//
//go:noescape
func dotFMA(a, b []float32) float32

// dotHalf is the dot product of a and the binary16s h (as long as a):
// dotHalfF16C where the CPU has F16C, AVX2 and FMA3, else dotHalfGo.
func dotHalf(a []float32, h []uint16) float32 {
	if hasF16C {
		return dotHalfF16C(a, h[:len(a)])
	}
	return dotHalfGo(a, h)
}

// dotHalfF16C is dotHalf in F16C, AVX2 and FMA3 (dot_amd64.s), as
// dotFMA with each eight binary16s converted on the way. h is at least
// as long as a.
//
//go:noescape
func dotHalfF16C(a []float32, h []uint16) float32

// halfEncode writes v times scale (a power of two) in binary16 to h (as
// long as v) and returns the sums of the squares of their differences,
// of v's scaled components and of the halves' (halfVector):
// halfEncodeF16C where the CPU has F16C, AVX2 and FMA3, else halfEncodeGo.
func halfEncode(v []float32, h []uint16, scale float32) (diff2, norm2, half2 float64) {
	if hasF16C {
		d, n, hh := halfEncodeF16C(v, h[:len(v)], scale)
		return float64(d), float64(n), float64(hh)
	}
	return halfEncodeGo(v, h, scale)
}

// halfEncodeF16C is halfEncode in F16C, AVX2 and FMA3 (dot_amd64.s):
// eight components at a time, rounded to the nearest binary16 (ties to
// even, as toHalf), the sums in float32.
//
//go:noescape
func halfEncodeF16C(v []float32, h []uint16, scale float32) (diff2, norm2, half2 float32)
