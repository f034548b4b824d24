package store

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestHalf: fromHalf and toHalf agree on every binary16, and toHalf
// rounds a float32 to the nearest binary16 (ties to even), to ±Inf past
// the largest and to zero below half the smallest subnormal.
func TestHalf(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := fromHalf(h)
		if f != f {
			if g := toHalf(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back %#04x", h, g)
			}
			continue
		}
		if g := toHalf(f); g != h {
			t.Fatalf("%#04x (%g) came back %#04x", h, f, g)
		}
	}
	nearest := func(x float32) uint16 { // the reference: the finite or infinite half nearest x
		best, bestD := uint16(0), math.Inf(1)
		for i := range 1 << 16 {
			h := uint16(i)
			f := float64(fromHalf(h))
			if f != f || math.Signbit(f) != math.Signbit(float64(x)) {
				continue
			}
			d := math.Abs(f - float64(x))
			if math.IsInf(f, 0) {
				// binary16 rounds to Inf from 65520 (65504 + half an ulp) up
				if math.Abs(float64(x)) < 65520 {
					continue
				}
				d = 0
			}
			if d < bestD || d == bestD && h&1 == 0 {
				best, bestD = h, d
			}
		}
		return best
	}
	rng := rand.New(rand.NewPCG(1, 2))
	xs := []float32{0, 1, -1, 65504, 65519.99, 65520, 1e6, 6.1035156e-05, 6.0975552e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-10, 1 + 1.0/2048, 1 + 3.0/2048, -(1 + 1.0/2048)}
	for range 300 {
		xs = append(xs, float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(50)-30))))
	}
	for _, x := range xs {
		if got, want := toHalf(x), nearest(x); got != want && !(x == 0 && got == 0) {
			t.Errorf("toHalf(%g) = %#04x (%g), want %#04x (%g)", x, got, fromHalf(got), want, fromHalf(want))
		}
	}
}

// TestDotHalf: dotHalf (in vector instructions where the CPU has them)
// and dotHalfGo are the dot product with the halves' floats, up to
// rounding, at every length around their blocks of 8 and 32.
func TestDotHalf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 39, 40, 63, 64, 65, 768, 1001} {
		a, h := make([]float32, n), make([]uint16, n+9)
		for i := range h {
			h[i] = toHalf(rng.Float32() - 0.5)
		}
		var want float64
		for i := range a {
			a[i] = rng.Float32() - 0.5
			want += float64(a[i]) * float64(fromHalf(h[i]))
		}
		for name, f := range map[string]func([]float32, []uint16) float32{"dotHalf": dotHalf, "dotHalfGo": dotHalfGo} {
			if got := f(a, h); math.Abs(float64(got)-want) > 1e-4 {
				t.Errorf("%s of %d: %v, want %v", name, n, got, want)
			}
		}
	}
}

// TestHalfEncode: halfEncode (in vector instructions where the CPU has
// them) writes the halves toHalf does and sums the same squares as
// halfEncodeGo, up to float32 rounding, at every length around its
// blocks of 8.
func TestHalfEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 768, 1001} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(30)-20)))
		}
		scale := float32(1 << 10)
		h, hg := make([]uint16, n+3), make([]uint16, n+3)
		d, nn, hh := halfEncode(v, h, scale)
		dg, ng, hgs := halfEncodeGo(v, hg, scale)
		if !slices.Equal(h, hg) {
			t.Errorf("%d: halves %v, want %v", n, h, hg)
		}
		for _, p := range [][2]float64{{d, dg}, {nn, ng}, {hh, hgs}} {
			if math.Abs(p[0]-p[1]) > 1e-4*math.Abs(p[1])+1e-30 {
				t.Errorf("%d: sums %v, %v, %v, want %v, %v, %v", n, d, nn, hh, dg, ng, hgs)
				break
			}
		}
	}
}

// TestHalfVectorBound: for vectors of many lengths and sizes (unit,
// tiny, huge, with zeros and subnormal halves), the float32 score and the
// halves' are within the bound halfVector gives, times the query's
// length; a vector that is not finite gets an infinite bound.
func TestHalfVectorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		d := 1 + rng.IntN(900)
		size := math.Pow(2, float64(rng.IntN(160)-80))
		v, q := make([]float32, d), make([]float32, d)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * size)
			if rng.IntN(10) == 0 {
				v[i] *= 1e-6 // a subnormal half
			}
			if rng.IntN(20) == 0 {
				v[i] = 0
			}
			q[i] = float32(rng.NormFloat64())
		}
		h := make([]uint16, d)
		unscale, bound := halfVector(v, h)
		var qn float64
		for _, x := range q {
			qn += float64(x) * float64(x)
		}
		exact, approx := float64(dot(q, v)), float64(dotHalf(q, h)*unscale)
		if diff := math.Abs(exact - approx); diff > math.Sqrt(qn)*float64(bound) || math.IsInf(float64(bound), 0) {
			t.Fatalf("trial %d (%d dims, size %g): |%g − %g| = %g, bound %g", trial, d, size, exact, approx, diff, math.Sqrt(qn)*float64(bound))
		}
	}
	for _, v := range [][]float32{{1, float32(math.NaN())}, {float32(math.Inf(-1)), 0}} {
		if _, bound := halfVector(v, make([]uint16, 2)); !math.IsInf(float64(bound), 1) {
			t.Errorf("%v: bound %g, want +Inf", v, bound)
		}
	}
}

// TestVectorChunksExact: VectorChunks, which ranks by the cached halves
// and scores the chunks that may be among the best again from their
// float32s, answers exactly the chunks and order of an exact cosine loop
// over every float32 (best first, equal scores by chunk id) for many
// queries and limits, over vectors the halves cannot tell apart (copies
// differing below a binary16's precision), equal vectors in several
// files, vectors of other lengths than unit, a zero vector and one of
// another model's dimensions.
func TestVectorChunksExact(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		now := time.Now().UTC()
		const dims = 37
		rng := rand.New(rand.NewPCG(7, 8))
		randVec := func() []float32 {
			v := make([]float32, dims)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		bases := make([][]float32, 6)
		for i := range bases {
			bases[i] = randVec()
		}
		var files []string
		for f := range 5 {
			id := fmt.Sprintf("file-%d", f)
			files = append(files, id)
			if _, _, err := s.PutFile(ctx, agent.File{ID: id, Owner: "ann", SHA256: id, Name: id, MediaType: "text/plain", Bytes: 1, Status: agent.FileProcessing, CreatedAt: now}, []byte{1}, 1<<20); err != nil {
				t.Fatal(err)
			}
			chunks := make([]agent.Chunk, 40)
			for i := range chunks {
				var v []float32
				switch k := rng.IntN(10); {
				case k < 4: // a base, nudged below a half's precision or not at all
					b := bases[rng.IntN(len(bases))]
					v = slices.Clone(b)
					if k > 0 {
						for j := range v {
							v[j] += v[j] * float32(rng.Float64()-0.5) * 1e-4
						}
					}
				case k == 4 && i > 0:
					v = make([]float32, dims) // zero
				case k == 5 && i > 0: // (a file's first vector sets its dimensions)
					v = randVec()[:dims-1] // another model's
				default:
					v = randVec()
					s := float32(math.Pow(10, float64(rng.IntN(7)-3)))
					for j := range v {
						v[j] *= s
					}
				}
				chunks[i] = agent.Chunk{Text: fmt.Sprintf("chunk %d of %s", i, id), Vector: v}
			}
			if err := s.FinishFile(ctx, id, chunks, agent.FileProcessed, ""); err != nil {
				t.Fatal(err)
			}
		}
		var rows []chunkRow
		if err := s.r.Order("id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		reference := func(files []string, q []float32, limit int) []int64 {
			type hit struct {
				id    int64
				score float32
			}
			var hits []hit
			for _, r := range rows {
				if !slices.Contains(files, r.FileID) || len(r.Vector) != 4*dims {
					continue
				}
				v := make([]float32, dims)
				for i := range v {
					v[i] = math.Float32frombits(uint32(r.Vector[4*i]) | uint32(r.Vector[4*i+1])<<8 | uint32(r.Vector[4*i+2])<<16 | uint32(r.Vector[4*i+3])<<24)
				}
				hits = append(hits, hit{r.ID, dot(q, v)})
			}
			slices.SortFunc(hits, func(a, b hit) int {
				if a.score != b.score {
					return cmp.Compare(b.score, a.score)
				}
				return cmp.Compare(a.id, b.id)
			})
			var ids []int64
			for _, h := range hits[:min(limit, len(hits))] {
				ids = append(ids, h.id)
			}
			return ids
		}
		for trial := range 60 {
			q := randVec()
			if trial%2 == 0 { // near a base: its copies compete
				q = slices.Clone(bases[trial%len(bases)])
				for j := range q {
					q[j] += float32(rng.NormFloat64() * 0.01)
				}
			}
			fs := files
			if trial%3 == 0 {
				fs = files[1:4]
			}
			limit := []int{1, 3, 8, 50, 500}[trial%5]
			want := reference(fs, q, limit)
			ps, err := s.VectorChunks(ctx, fs, q, limit)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int64, len(ps))
			for i, p := range ps {
				got[i] = p.ChunkID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, limit %d: %v, want %v", trial, limit, got, want)
			}
		}
	})
}
