package store

import (
	"math"
	"sync"
)

// Half-precision vectors: the vector cache (vecCache) keeps each chunk's
// vector as IEEE 754 binary16, half the bytes of its float32s, so the
// cosine loop, which memory bounds at 100k chunks, reads half as much. A
// half vector ranks only: each has an error bound (halfBound) within
// which its exact score lies, and VectorChunks scores every chunk that
// bound leaves in the running again from its float32s, so the ranking is
// exactly the float32 one.

// toHalf is x rounded to the nearest binary16 (ties to even); past the
// largest (65504) it is ±Inf, NaN stays NaN.
func toHalf(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // beyond binary16's range
		return sign | 0x7c00
	case exp-127 >= -14: // a normal binary16
		e := uint32(exp - 127 + 15)
		m := mant >> 13
		rest := mant & 0x1fff
		h := e<<10 | m
		if rest > 0x1000 || rest == 0x1000 && m&1 == 1 {
			h++ // a carry into the exponent is right, up to Inf
		}
		return sign | uint16(h)
	case exp-127 >= -25: // a subnormal binary16 (or zero, rounded)
		m := mant | 0x800000 // the implicit bit
		shift := uint(-(exp - 127) - 14 + 13)
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || rest == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	default:
		return sign
	}
}

// fromHalf is binary16 h as a float32 (exactly).
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp-15+127)<<23 | mant<<13)
	default: // zero or subnormal: mant × 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	}
}

// halfTable is fromHalf of every binary16, for dotHalfGo.
var halfTable = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = fromHalf(uint16(i))
	}
	return &t
})

// dotHalfGo is the dot product of a and the binary16s h (as long as a)
// in Go, in eight running sums (as dotGo).
func dotHalfGo(a []float32, h []uint16) float32 {
	t := halfTable()
	h = h[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8:i+8], h[i:i+8:i+8]
		s0 += x[0] * t[y[0]]
		s1 += x[1] * t[y[1]]
		s2 += x[2] * t[y[2]]
		s3 += x[3] * t[y[3]]
		s4 += x[4] * t[y[4]]
		s5 += x[5] * t[y[5]]
		s6 += x[6] * t[y[6]]
		s7 += x[7] * t[y[7]]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * t[h[i]]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// halfVector writes v in binary16 to h (as long as v), scaled by a power
// of two so its largest component is near 2^13 (well within binary16's
// range, whatever v's length), and returns unscale, the power of two
// that undoes it (exactly: v's halves are h's floats times unscale), and
// bound: for any query q, the float32 score dot(q, v) and the one of the
// halves, dotHalf(q, h) × unscale, are within bound × |q| of each other.
// By Cauchy-Schwarz |q·v − q·v̂| ≤ |q| |v − v̂| (v̂ the halves' vector,
// |v − v̂| measured here), and each float32 dot product of n terms, in any
// order, is within γ(n) Σ|q_i x_i| ≤ γ(n) |q| |x| of its exact value
// (γ(n) = n·u/(1−n·u), u = 2^-24). The measured sums of squares are
// float32 sums of n non-negative terms too (within γ(n) of theirs), and
// the bound is widened by 1 % more for the rounding of this arithmetic
// and of the comparisons it serves. A vector that is not finite, or too
// small or large to scale, gets an infinite bound: it is always scored
// again from its float32s.
func halfVector(v []float32, h []uint16) (unscale, bound float32) {
	var m float32
	for _, x := range v {
		m = max(m, abs32(x))
	}
	if m != m || m > 0x1p100 || m != 0 && m < 0x1p-100 {
		clear(h[:len(v)])
		return 1, float32(math.Inf(1))
	}
	scale, unscale64 := 1.0, 1.0
	if m != 0 {
		_, e := math.Frexp(float64(m)) // m = f × 2^e, 0.5 ≤ f < 1
		scale, unscale64 = math.Ldexp(1, 13-e), math.Ldexp(1, e-13)
	}
	diff2, norm2, half2 := halfEncode(v, h, float32(scale))
	n := float64(len(v) + 4)
	gamma := n * 0x1p-24 / (1 - n*0x1p-24)
	grow := math.Sqrt(1 + gamma) // on a square root, of a sum within γ(n)
	b := (math.Sqrt(diff2)*grow+gamma*(math.Sqrt(norm2)+math.Sqrt(half2))*grow)*unscale64*1.01 + 0x1p-100
	return float32(unscale64), math.Nextafter32(float32(b), float32(math.Inf(1)))
}

// halfEncodeGo is halfEncode in Go, its sums in float64.
func halfEncodeGo(v []float32, h []uint16, scale float32) (diff2, norm2, half2 float64) {
	h = h[:len(v)]
	for i, x := range v {
		x *= scale
		hx := toHalf(x)
		h[i] = hx
		y := float64(fromHalf(hx))
		d := float64(x) - y
		diff2 += d * d
		norm2 += float64(x) * float64(x)
		half2 += y * y
	}
	return diff2, norm2, half2
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
