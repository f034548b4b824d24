package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// BenchmarkKnowledgeSearch measures the two rankings of knowledge search
// (store/file.go) over N chunks of 768-dimensional vectors
// (AGENTIK_KNOWLEDGE_BENCH_CHUNKS, default 10000) on SQLite, or on
// PostgreSQL with AGENTIK_KNOWLEDGE_BENCH_PG=1, beside their bare
// baselines: an exact cosine loop over the same float32 data in memory
// (vector) and the same FTS query without the file filter, joins or
// ranking by file (keyword). Each reports its p50 and p99 latency.
// docs/BENCHMARKS.md records the figures.
func BenchmarkKnowledgeSearch(b *testing.B) {
	const dims, perFile = 768, 1000
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("AGENTIK_KNOWLEDGE_BENCH_CHUNKS")); err == nil && v > 0 {
		n = v
	}
	dsn := "sqlite:" + filepath.Join(b.TempDir(), "knowledge.db")
	if os.Getenv("AGENTIK_KNOWLEDGE_BENCH_PG") == "1" {
		dsn = postgresSchema(b)
	}
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	var all [][]float32
	var files []string
	for f := 0; f*perFile < n; f++ {
		id := fmt.Sprintf("file-%04d", f)
		files = append(files, id)
		if _, _, err := s.PutFile(ctx, agent.File{ID: id, Owner: "u", SHA256: id, Name: id + ".pdf", MediaType: "application/pdf", Bytes: 1, Status: agent.FileProcessing, CreatedAt: time.Now()}, []byte{1}, 1<<40); err != nil {
			b.Fatal(err)
		}
		chunks := make([]agent.Chunk, min(perFile, n-f*perFile))
		for i := range chunks {
			ws := make([]string, 150)
			for j := range ws {
				ws[j] = words[rng.IntN(len(words))]
			}
			v := make([]float32, dims)
			for j := range v {
				v[j] = float32(rng.NormFloat64())
			}
			v = unit(v)
			all = append(all, v)
			chunks[i] = agent.Chunk{Page: i + 1, Text: strings.Join(ws, " "), Vector: v}
		}
		if err := s.FinishFile(ctx, id, chunks, agent.FileProcessed, ""); err != nil {
			b.Fatal(err)
		}
	}
	q := all[rng.IntN(len(all))]
	query := words[10] + " " + words[200] + " " + words[3000]
	run := func(b *testing.B, f func()) {
		f() // warm: the vector cache's first read of each file is measured apart (cold)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			f()
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("vector-cold", func(b *testing.B) {
		for b.Loop() {
			t0 := time.Now()
			s.vectors.drop(files[0])
			for _, f := range files[1:] {
				s.vectors.drop(f)
			}
			if _, err := s.VectorChunks(ctx, files, q, 50); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(t0).Microseconds())/1000, "ms")
		}
	})
	b.Run("vector", func(b *testing.B) {
		run(b, func() {
			if _, err := s.VectorChunks(ctx, files, q, 50); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("bare-cosine", func(b *testing.B) {
		run(b, func() {
			best := float32(math.Inf(-1))
			for _, v := range all {
				var d float32
				for i, x := range q {
					d += x * v[i]
				}
				best = max(best, d)
			}
			_ = best
		})
	})
	b.Run("keyword", func(b *testing.B) {
		run(b, func() {
			if _, err := s.KeywordChunks(ctx, files, query, 50); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("bare-fts", func(b *testing.B) {
		sql := `SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY bm25(chunk_fts) LIMIT 50`
		arg := `"w10" OR "w200" OR "w3000"`
		if s.postgres {
			sql, arg = `SELECT id FROM file_chunk WHERE tsv @@ to_tsquery('simple', ?) ORDER BY ts_rank(tsv, to_tsquery('simple', 'w10 | w200 | w3000')) DESC LIMIT 50`, "w10 | w200 | w3000"
		}
		run(b, func() {
			var ids []int64
			if err := s.r.Raw(sql, arg).Scan(&ids).Error; err != nil {
				b.Fatal(err)
			}
		})
	})
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// BenchmarkDot measures VectorChunks' dot product over 100,000 vectors
// of 768 dimensions (one search of 100k chunks) against a plain loop of
// one running sum: over float32s (go, dot) and over the vector cache's
// binary16s (half: dotHalf, which VectorChunks' loop runs).
func BenchmarkDot(b *testing.B) {
	const dims, n = 768, 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	flat := make([]float32, dims*n)
	for i := range flat {
		flat[i] = rng.Float32()
	}
	q := flat[:dims]
	b.Run("plain", func(b *testing.B) {
		var sink float32
		for b.Loop() {
			for i := range n {
				v := flat[i*dims : (i+1)*dims]
				var s float32
				for j, x := range q {
					s += x * v[j]
				}
				sink += s
			}
		}
		_ = sink
	})
	for _, v := range []struct {
		name string
		dot  func(a, b []float32) float32
	}{{"go", dotGo}, {"dot", dot}} {
		b.Run(v.name, func(b *testing.B) {
			var sink float32
			for b.Loop() {
				for i := range n {
					sink += v.dot(q, flat[i*dims:(i+1)*dims])
				}
			}
			_ = sink
		})
	}
	half := make([]uint16, len(flat))
	for i, x := range flat {
		half[i] = toHalf(x)
	}
	b.Run("half", func(b *testing.B) {
		var sink float32
		for b.Loop() {
			for i := range n {
				sink += dotHalf(q, half[i*dims:(i+1)*dims])
			}
		}
		_ = sink
	})
}

// TestDot: dot (in vector instructions where the CPU has them) and dotGo
// are the plain loop's dot product, up to rounding, at every length
// around their blocks of 8 and 32, b longer than a too.
func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 39, 40, 63, 64, 65, 768, 1001} {
		a, b := make([]float32, n), make([]float32, n+9)
		for i := range b {
			b[i] = rng.Float32() - 0.5
		}
		var want float64
		for i := range a {
			a[i] = rng.Float32() - 0.5
			want += float64(a[i]) * float64(b[i])
		}
		for name, f := range map[string]func(a, b []float32) float32{"dot": dot, "dotGo": dotGo} {
			if got := f(a, b); math.Abs(float64(got)-want) > 1e-4 {
				t.Errorf("%s of %d: %v, want %v", name, n, got, want)
			}
		}
	}
}
