package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// BenchmarkSearch searches 100,000 messages (1,000 conversations of 100
// messages of 10–60 words drawn from a Zipf-distributed vocabulary of
// 20,000 words) on SQLite, with a mix of queries: a frequent word, a rare
// word, two words, a prefix. It reports the p50 and p99 latency of one
// Search and its CPU time. AGENTIK_SEARCH_BENCH_DB keeps the database
// between runs; AGENTIK_SEARCH_BENCH_QUERY runs one query only. docs/BENCHMARKS.md records the figures.
func BenchmarkSearch(b *testing.B) {
	const convs, perConv, vocab = 1000, 100, 20000
	path := filepath.Join(b.TempDir(), "search.db")
	if p := os.Getenv("AGENTIK_SEARCH_BENCH_DB"); p != "" {
		path = p
	}
	_, statErr := os.Stat(path)
	s, err := Open(b.Context(), "sqlite:"+path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	words := make([]string, vocab)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx%s", i, strings.Repeat("a", i%5))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, vocab-1)
	for c := range convs {
		if statErr == nil {
			break // AGENTIK_SEARCH_BENCH_DB names a database filled by an earlier run
		}
		cid := fmt.Sprintf("c%04d", c)
		recs := []*agent.Record{createdRec(cid, words[zipf.Uint64()]+" "+words[zipf.Uint64()])}
		for range perConv {
			n := 10 + rng.IntN(50)
			ws := make([]string, n)
			for i := range ws {
				ws[i] = words[zipf.Uint64()]
			}
			recs = append(recs, assistantRec(cid, strings.Join(ws, " ")))
		}
		if err := s.Append(b.Context(), recs...); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{words[0], words[5], words[500], words[15000], words[3] + " " + words[40], "w12", words[7] + " w19"}
	if q := os.Getenv("AGENTIK_SEARCH_BENCH_QUERY"); q != "" {
		queries = []string{q}
	}
	parsed := make([]agent.SearchQuery, len(queries))
	for i, q := range queries {
		if parsed[i], err = agent.ParseSearch(q, agent.DefaultSearchLimit); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := s.Search(b.Context(), parsed[i%len(parsed)]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	// CPU time per search: what a search costs without the other
	// processes of a busy machine between its steps.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
