package store

import "golang.org/x/sys/cpu"

// hasFMA: the CPU has AVX2 and FMA3 (x86-64-v3), which dotFMA uses.
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

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
