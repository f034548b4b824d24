package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The connections scenario fits its count in the descriptor limit: one
// descriptor a connection in each process, two when agentik runs in the
// bench's.
func TestConnsThatFit(t *testing.T) {
	for _, c := range []struct {
		want  int
		limit uint64
		same  bool
		fit   int
	}{
		{10_000, 20_000, false, 10_000},
		{10_000, 1024, false, 512},
		{10_000, 20_000, true, 9_744},
		{100, 1 << 20, true, 100},
		{10, 100, false, 0},
	} {
		if got := connsThatFit(c.want, c.limit, c.same); got != c.fit {
			t.Errorf("connsThatFit(%d, %d, %v) = %d, want %d", c.want, c.limit, c.same, got, c.fit)
		}
	}
}

func TestTopCosine(t *testing.T) {
	vecs := []float32{1, 0, 0, 1, 0.6, 0.8, -1, 0, 0.8, 0.6}
	if got := topCosine(vecs, []float32{1, 0}, 3); !slices.Equal(got, []int{0, 4, 2}) {
		t.Errorf("top 3 = %v, want [0 4 2]", got)
	}
	if got := topCosine(vecs, []float32{0, 1}, 10); !slices.Equal(got, []int{1, 2, 4, 0, 3}) {
		t.Errorf("top of all = %v, want [1 2 4 0 3]", got)
	}
}

// The soak's memory growth compares the medians of the tenth after the
// warm-up (the first fifth) and of the last tenth: a spike is no trend,
// and the warm-up's growth does not count.
func TestRSSGrowth(t *testing.T) {
	flat := make([]int64, 100)
	for i := range flat {
		flat[i] = 100 + int64(i%3) // noise
		if i < 20 {
			flat[i] = int64(10 + 4*i) // the warm-up grows
		}
	}
	flat[95] = 500 // one sample before a collection
	if g, w, e := rssGrowth(flat); g != 0 || w != 101 || e != 101 {
		t.Errorf("flat after warm-up: growth %v%% (%d → %d), want 0", g, w, e)
	}
	leak := make([]int64, 100)
	for i := range leak {
		leak[i] = 1000 + int64(i)
	}
	if g, w, e := rssGrowth(leak); w != 1025 || e != 1095 || g < 6.8 || g > 6.9 {
		t.Errorf("leak: growth %v%% (%d → %d), want 1025 → 1095 (6.8%%)", g, w, e)
	}
	if g, _, _ := rssGrowth([]int64{5, 6}); g != 0 {
		t.Errorf("two samples: %v%%, want 0 (too few to say)", g)
	}
	if g, w, e := rssGrowth([]int64{100, 100, 120}); w != 100 || e != 120 || g != 20 {
		t.Errorf("three samples: growth %v%% (%d → %d), want 20%% (100 → 120)", g, w, e)
	}
}

func TestGoroutinesSettled(t *testing.T) {
	for _, c := range []struct {
		base, n int
		ok      bool
	}{
		{100, 100, true}, {100, 90, true}, {100, 108, true}, {100, 109, false},
		{1000, 1020, true}, {1000, 1021, false}, {1000, 2000, false},
	} {
		if got := goroutinesSettled(c.base, c.n); got != c.ok {
			t.Errorf("goroutinesSettled(%d, %d) = %v, want %v", c.base, c.n, got, c.ok)
		}
	}
}

func TestParseGoroutines(t *testing.T) {
	text := "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\ngo_threads 9\n"
	if n, ok := parseGoroutines(text); !ok || n != 42 {
		t.Errorf("parseGoroutines = %d, %v; want 42", n, ok)
	}
	if _, ok := parseGoroutines("go_threads 9\n"); ok {
		t.Error("parseGoroutines found a count in a text without one")
	}
	mem := "go_memstats_sys_bytes 7.5e+07\ngo_memstats_sys_bytes_total 1\ngo_memstats_heap_released_bytes 2.5e+07\n"
	if v, ok := parseMetric(mem, "go_memstats_sys_bytes"); !ok || v != 75e6 {
		t.Errorf("parseMetric(sys) = %v, %v; want 7.5e7", v, ok)
	}
	if v, ok := parseMetric(mem, "go_memstats_heap_released_bytes"); !ok || v != 25e6 {
		t.Errorf("parseMetric(released) = %v, %v; want 2.5e7", v, ok)
	}
}

func TestParseTop(t *testing.T) {
	out := `File: agentik-bench
Type: cpu
Active filters:
   tagfocus=side=server
Showing nodes accounting for 1.20s, 60.00% of 2s total
      flat  flat%   sum%        cum   cum%
     0.50s 25.00% 25.00%      0.60s 30.00%  runtime/internal/syscall.Syscall6
     0.30s 15.00% 40.00%      1.10s 55.00%  github.com/jackc/pgx/v5/pgconn.(*PgConn).receiveMessage
     0.40s 20.00% 60.00%      0.40s 20.00%  runtime.futex
`
	es := parseTop(out, 2)
	want := []topEntry{{"runtime/internal/syscall.Syscall6", 25, 30}, {"github.com/jackc/pgx/v5/pgconn.(*PgConn).receiveMessage", 15, 55}}
	if !slices.Equal(es, want) {
		t.Errorf("parseTop = %+v, want %+v", es, want)
	}
	if es := parseTop("no profile\n", 5); len(es) != 0 {
		t.Errorf("parseTop of no table = %+v", es)
	}
}

// The fake's embeddings are 768 floats of unit length, the same for the
// same text, and nearer for texts that share words; its endpoint answers
// a list in order.
func TestFakeEmbeddings(t *testing.T) {
	a, b, c := benchEmbedding("w1 w2 w3"), benchEmbedding("w1 w2 w4"), benchEmbedding("w7 w8 w9")
	dot := func(x, y []float32) (d float32) {
		for i := range x {
			d += x[i] * y[i]
		}
		return d
	}
	if len(a) != embeddingDims || dot(a, a) < 0.999 || dot(a, a) > 1.001 {
		t.Fatalf("%d dimensions, |v|² = %v", len(a), dot(a, a))
	}
	if !slices.Equal(a, benchEmbedding("W1 w2, w3")) || dot(a, b) <= dot(a, c) {
		t.Errorf("not deterministic or not nearer: a·b %v, a·c %v", dot(a, b), dot(a, c))
	}
	f, err := startFake()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp, err := http.Post(f.URL+"/embeddings", "application/json", strings.NewReader(`{"model":"m","input":["w1 w2 w3","w7 w8 w9"]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Index     int
			Embedding []float32
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 2 || out.Data[1].Index != 1 || !slices.Equal(out.Data[0].Embedding, a) || !slices.Equal(out.Data[1].Embedding, c) {
		t.Errorf("answer: %+v", out)
	}
}
