package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestParseTSVectorSend: a tsvector's binary form read back (as
// tsvectorsend writes a'b at 1A,2B,3C,4, x, été at 16383B), weights A to
// D, a lexeme without positions; a truncated or longer one refused.
func TestParseTSVectorSend(t *testing.T) {
	type entry struct {
		lexeme  string
		weights []uint8
	}
	b := []byte{0, 0, 0, 3}
	b = append(append(b, "a'b\x00"...), 0, 4, 0xc0, 1, 0x80, 2, 0x40, 3, 0, 4)
	b = append(append(b, "x\x00"...), 0, 0)
	b = append(append(b, "été\x00"...), 0, 1, 0xbf, 0xff)
	var got []entry
	ok := parseTSVectorSend(b, func(l []byte, ws []uint8) { got = append(got, entry{string(l), slices.Clone(ws)}) })
	want := []entry{{"a'b", []uint8{3, 2, 1, 0}}, {"x", []uint8{0}}, {"été", []uint8{2}}}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parsed %v %v, want %v", ok, got, want)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0), b[:3], b[:9]} {
		if parseTSVectorSend(bad, func([]byte, []uint8) {}) {
			t.Errorf("% x parsed", bad)
		}
	}
}

// TestParseOrQuery: a disjunction of lexemes read sorted by bytes without
// duplicates; any other tsquery refused.
func TestParseOrQuery(t *testing.T) {
	if got, ok := parseOrQuery(`'w2' | 'it''s' | 'w10' | 'w2' | 'été'`); !ok || !slices.Equal(got, []string{"it's", "w10", "w2", "été"}) {
		t.Errorf("parsed %v %v", got, ok)
	}
	if got, ok := parseOrQuery(``); !ok || len(got) != 0 {
		t.Errorf("empty: %v %v", got, ok)
	}
	for _, bad := range []string{`'a' & 'b'`, `'a' <-> 'b'`, `!'a'`, `'a':*`, `'a' | ( 'b' & 'c' )`, `'a' |`, `'a':B`} {
		if got, ok := parseOrQuery(bad); ok {
			t.Errorf("%q parsed: %v", bad, got)
		}
	}
}

// TestKeywordChunksTSRank: on PostgreSQL, KeywordChunks ranks from the
// cache's lexemes (no query reading every match's row), and the cache's
// scores are ts_rank's to the bit for every match: headings (weight A)
// and text (B), a lexeme repeated past the 256 positions a tsvector keeps,
// positions past its 16,383, quotes in lexemes, queries of repeated and
// absent words. A file finished again is ranked by its new chunks.
func TestKeywordChunksTSRank(t *testing.T) {
	t.Parallel()
	if os.Getenv("AGENTIK_TEST_NO_POSTGRES") == "1" {
		t.Skip("AGENTIK_TEST_NO_POSTGRES=1")
	}
	s := open(t, postgresSchema(t), Options{})
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(7, 8))
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa it's /a'b?c= Été 42")
	words := func(n int) string {
		ws := make([]string, n)
		for j := range ws {
			ws[j] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	finish := func(id string, n int) {
		chunks := make([]agent.Chunk, n)
		for i := range chunks {
			chunks[i] = agent.Chunk{Text: words(1 + rng.IntN(60))}
			switch rng.IntN(6) {
			case 0:
				chunks[i].Heading = words(1 + rng.IntN(3))
			case 1:
				chunks[i].Text = strings.Repeat("gamma ", 300) + words(5) // past 256 positions
			case 2:
				chunks[i].Text = strings.Repeat("filler ", 16400) + words(8) // past position 16,383
			}
		}
		if err := s.FinishFile(ctx, id, chunks, agent.FileProcessed, ""); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"file-a", "file-b", "file-c"}
	for _, id := range files {
		if _, _, err := s.PutFile(ctx, agent.File{ID: id, Owner: "ann", SHA256: id, Name: id, MediaType: "text/plain", Bytes: 1, Status: agent.FileProcessing, CreatedAt: time.Now()}, []byte{1}, 1<<20); err != nil {
			t.Fatal(err)
		}
		finish(id, 40)
	}
	check := func(query string) {
		t.Helper()
		tsq := strings.Join(queryTerms(query), " | ")
		var want []struct {
			ID    int64
			Score float32
		}
		if err := s.r.Raw(`SELECT id, ts_rank(tsv, to_tsquery('simple', ?)) AS score FROM file_chunk
			WHERE file_id IN ? AND tsv @@ to_tsquery('simple', ?) ORDER BY score DESC, id`, tsq, files, tsq).Scan(&want).Error; err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.rankTerms(ctx, files, tsq, len(want)+5)
		if err != nil || !ok {
			t.Fatalf("%q: ranked %v, %v", query, ok, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d ranked, ts_rank matches %d", query, len(got), len(want))
		}
		for i, w := range want {
			if got[i].id != w.ID || got[i].score != w.Score {
				t.Fatalf("%q: #%d is %d scored %v, ts_rank's %d scored %v", query, i, got[i].id, got[i].score, w.ID, w.Score)
			}
		}
		before := s.termRanked.Load()
		ps, err := s.KeywordChunks(ctx, files, query, 7)
		if err != nil {
			t.Fatal(err)
		}
		if s.termRanked.Load() != before+1 {
			t.Errorf("%q: KeywordChunks did not rank from the cache", query)
		}
		for i, p := range ps {
			if p.ChunkID != want[i].ID {
				t.Fatalf("%q: KeywordChunks' #%d is %d, ts_rank's %d", query, i, p.ChunkID, want[i].ID)
			}
		}
		if len(ps) != min(7, len(want)) {
			t.Errorf("%q: %d passages, want %d", query, len(ps), min(7, len(want)))
		}
	}
	for range 30 {
		check(words(1 + rng.IntN(5)))
	}
	check("gamma")
	check("gamma gamma absent")
	check("absent")
	finish("file-b", 25) // as a retried file is: its chunks replaced
	for range 10 {
		check(words(1 + rng.IntN(4)))
	}
}

// TestKeywordChunksPastTheCache: on PostgreSQL, a file whose postings the
// cache cannot hold (more distinct parts than it numbers, here lowered to
// 2) is ranked by the database's query, the same ranking, and is not read
// again for each search.
func TestKeywordChunksPastTheCache(t *testing.T) {
	t.Parallel()
	if os.Getenv("AGENTIK_TEST_NO_POSTGRES") == "1" {
		t.Skip("AGENTIK_TEST_NO_POSTGRES=1")
	}
	s := open(t, postgresSchema(t), Options{})
	s.vectors.partsMax = 2
	ctx := t.Context()
	if _, _, err := s.PutFile(ctx, agent.File{ID: "file-a", Owner: "ann", SHA256: "a", Name: "a", MediaType: "text/plain", Bytes: 1, Status: agent.FileProcessing, CreatedAt: time.Now()}, []byte{1}, 1<<20); err != nil {
		t.Fatal(err)
	}
	// Parts of one B, of two Bs, of an A and a B: three.
	chunks := []agent.Chunk{{Text: "alpha beta"}, {Text: "alpha alpha"}, {Heading: "alpha", Text: "alpha gamma"}, {Text: "gamma"}}
	if err := s.FinishFile(ctx, "file-a", chunks, agent.FileProcessed, ""); err != nil {
		t.Fatal(err)
	}
	var want []int64
	if err := s.r.Raw(`SELECT id FROM file_chunk WHERE tsv @@ to_tsquery('simple', 'alpha | gamma')
		ORDER BY ts_rank(tsv, to_tsquery('simple', 'alpha | gamma')) DESC, id`).Scan(&want).Error; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ps, err := s.KeywordChunks(ctx, []string{"file-a"}, "alpha gamma", 10)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int64, len(ps))
		for i, p := range ps {
			got[i] = p.ChunkID
		}
		if !slices.Equal(got, want) || len(want) != 4 {
			t.Fatalf("ranked %v, ts_rank's %v", got, want)
		}
	}
	if n := s.termRanked.Load(); n != 0 {
		t.Errorf("%d searches ranked from the cache", n)
	}
	s.vectors.mu.Lock()
	ft := s.vectors.termFiles["file-a"]
	s.vectors.mu.Unlock()
	if ft != unreadTerms {
		t.Errorf("the file's entry in the cache: %v, want unreadTerms", ft)
	}
}

// TestTopN: topN keeps the n greatest of what it is offered (with
// repeats, n past the count, and n 0), the least of them on top.
func TestTopN(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 50, 300} {
		xs := make([]int, 200)
		for i := range xs {
			xs[i] = r.IntN(60)
		}
		top := newTopN(n, func(a, b int) bool { return a < b })
		for _, x := range xs {
			top.offer(x)
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		want = want[len(want)-min(n, len(want)):]
		got := slices.Clone(top.items)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("n %d: kept %v, want %v", n, got, want)
		}
		if top.full() != (n <= len(xs)) {
			t.Errorf("n %d: full() = %v", n, top.full())
		}
		if len(want) > 0 && top.least() != want[0] {
			t.Errorf("n %d: least %d, want %d", n, top.least(), want[0])
		}
	}
}
