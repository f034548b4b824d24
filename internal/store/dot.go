package store

// dotGo is the dot product of a and b (as long as a) in Go, in eight
// running sums: with one, each add waits for the one before (its latency,
// about 4 cycles on x86); eight keep the adder busy, about 3× faster at
// 768 dimensions (BenchmarkDot). The order of the additions differs from
// a plain loop's in the last bits, not in ranking. dot is this where the
// CPU has no vector instructions it uses (dot_amd64.go).
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}
