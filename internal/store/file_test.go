package store

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestDeleteUserDeletesFiles: a deleted user's files, chunks and
// knowledge bases (a shared one too) go with them; another user's stay.
func TestDeleteUserDeletesFiles(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		now := time.Now().UTC()
		for _, u := range []string{"ann", "bob"} {
			if err := s.CreateUser(ctx, agent.User{ID: u, Name: u, Role: agent.RoleMember, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			f := agent.File{ID: "file-" + u, Owner: u, SHA256: u, Name: u + ".txt", MediaType: "text/plain", Bytes: 3, Status: agent.FileProcessing, CreatedAt: now}
			if _, _, err := s.PutFile(ctx, f, []byte("abc"), 1<<20); err != nil {
				t.Fatal(err)
			}
			if err := s.FinishFile(ctx, f.ID, []agent.Chunk{{Text: "words of " + u, Vector: []float32{1, 0}}}, agent.FileProcessed, ""); err != nil {
				t.Fatal(err)
			}
			if err := s.PutKnowledge(ctx, agent.Knowledge{ID: "vs_" + u, Owner: u, Name: u, Visibility: agent.VisibilityShared, FileIDs: []string{f.ID}, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		if ps, err := s.VectorChunks(ctx, []string{"file-ann"}, []float32{1, 0}, 5); err != nil || len(ps) != 1 {
			t.Fatalf("before: %v, %v", ps, err)
		}
		if err := s.DeleteUser(ctx, "ann"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.File(ctx, "", "file-ann"); agent.ErrorCode(err) != agent.CodeNotFound {
			t.Errorf("ann's file after her deletion: %v", err)
		}
		if _, err := s.Knowledge(ctx, "vs_ann"); agent.ErrorCode(err) != agent.CodeNotFound {
			t.Errorf("ann's shared base after her deletion: %v", err)
		}
		for _, q := range []func() ([]agent.Passage, error){
			func() ([]agent.Passage, error) { return s.KeywordChunks(ctx, []string{"file-ann"}, "words", 5) },
			func() ([]agent.Passage, error) { return s.VectorChunks(ctx, []string{"file-ann"}, []float32{1, 0}, 5) },
		} {
			if ps, err := q(); err != nil || len(ps) != 0 {
				t.Errorf("ann's chunks after her deletion: %v, %v", ps, err)
			}
		}
		if ps, err := s.KeywordChunks(ctx, []string{"file-bob"}, "words", 5); err != nil || len(ps) != 1 {
			t.Errorf("bob's chunks: %v, %v", ps, err)
		}
	})
}

// TestKeywordChunkSpans: the keyword search keeps the chunks of the files
// asked for by their id spans (SQLite) and finds no other file's, a
// file ingested again is found by its new chunks (its span is dropped),
// and a file whose ids are not one span is searched by each match's file.
func TestKeywordChunkSpans(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		now := time.Now().UTC()
		finish := func(id, owner string, texts ...string) {
			t.Helper()
			if _, _, err := s.PutFile(ctx, agent.File{ID: id, Owner: owner, SHA256: id, Name: id, MediaType: "text/plain", Bytes: 1, Status: agent.FileProcessing, CreatedAt: now}, []byte{1}, 1<<20); err != nil {
				t.Fatal(err)
			}
			chunks := make([]agent.Chunk, len(texts))
			for i, x := range texts {
				chunks[i] = agent.Chunk{Text: x}
			}
			if err := s.FinishFile(ctx, id, chunks, agent.FileProcessed, ""); err != nil {
				t.Fatal(err)
			}
		}
		files := func(ps []agent.Passage) map[string]int {
			got := map[string]int{}
			for _, p := range ps {
				got[p.FileID+" "+p.Text]++
			}
			return got
		}
		finish("file-a", "ann", "shared word one", "shared word two")
		finish("file-b", "bob", "shared word bob", "shared word bob two")
		finish("file-c", "ann", "shared word three")
		ps, err := s.KeywordChunks(ctx, []string{"file-a", "file-c"}, "shared", 50)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"file-a shared word one": 1, "file-a shared word two": 1, "file-c shared word three": 1}
		if got := files(ps); !maps.Equal(got, want) {
			t.Errorf("ann's files: %v, want %v", got, want)
		}
		if !s.postgres {
			if spans, ok, err := s.chunkSpans(ctx, []string{"file-c", "file-a"}); err != nil || !ok || len(spans) != 2 || spans[0].last-spans[0].first != 1 || spans[1].first != spans[1].last {
				t.Errorf("spans of a and c: %v, %v, %v", spans, ok, err)
			}
			if spans, ok, err := s.chunkSpans(ctx, []string{"file-b", "file-c", "file-a"}); err != nil || !ok || len(spans) != 1 || spans[0].last-spans[0].first != 4 {
				t.Errorf("spans of a, b and c (one after another): %v, %v, %v", spans, ok, err)
			}
		}
		finish("file-b2", "bob", "shared word bob again")
		if err := s.FinishFile(ctx, "file-a", []agent.Chunk{{Text: "shared word anew"}}, agent.FileProcessed, ""); err != nil {
			t.Fatal(err)
		}
		if ps, err = s.KeywordChunks(ctx, []string{"file-a"}, "shared", 50); err != nil {
			t.Fatal(err)
		}
		if got, want := files(ps), map[string]int{"file-a shared word anew": 1}; !maps.Equal(got, want) {
			t.Errorf("file a ingested again: %v, want %v", got, want)
		}
		if s.postgres {
			return
		}
		// A chunk of c's written apart (not one span with its others), one
		// of bob's between them.
		for _, c := range []chunkRow{{ID: 1000, FileID: "file-c", Text: "shared word late"}, {ID: 999, FileID: "file-b", Text: "shared word bob late"}} {
			if err := s.w.Create(&c).Error; err != nil {
				t.Fatal(err)
			}
		}
		s.vectors.drop("file-c")
		if _, ok, err := s.chunkSpans(ctx, []string{"file-c"}); err != nil || ok {
			t.Errorf("spans of c's ids apart: ok %v, %v", ok, err)
		}
		if ps, err = s.KeywordChunks(ctx, []string{"file-c"}, "shared", 50); err != nil {
			t.Fatal(err)
		}
		if got, want := files(ps), map[string]int{"file-c shared word three": 1, "file-c shared word late": 1}; !maps.Equal(got, want) {
			t.Errorf("file c apart: %v, want %v", got, want)
		}
	})
}

// TestKeywordChunksRanking: KeywordChunks answers the same chunks in the
// same order as ranking every match of the files in one plain query
// (bm25 on SQLite, ts_rank on PostgreSQL; ties by id), over a corpus of
// headings and repeated words, for several queries and sets of files (a
// file id that needs quoting among them), each asked again past the
// prepared statement's fifth run (PostgreSQL's generic plan); a file not
// asked for is never in the answer. On PostgreSQL a chunk's tsvector
// stays in its row and its vector leaves it (postgresChunkStorage).
func TestKeywordChunksRanking(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		now := time.Now().UTC()
		rng := rand.New(rand.NewPCG(5, 6))
		vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon")
		ids := []string{"file-a", "file-b", `file "c\,{d}`, "file-e"}
		for _, id := range ids {
			if _, _, err := s.PutFile(ctx, agent.File{ID: id, Owner: "ann", SHA256: id, Name: id, MediaType: "text/plain", Bytes: 1, Status: agent.FileProcessing, CreatedAt: now}, []byte{1}, 1<<20); err != nil {
				t.Fatal(err)
			}
			chunks := make([]agent.Chunk, 30)
			for i := range chunks {
				ws := make([]string, 5+rng.IntN(40))
				for j := range ws {
					ws[j] = vocab[rng.IntN(len(vocab))]
				}
				chunks[i] = agent.Chunk{Text: strings.Join(ws, " "), Vector: []float32{1, 0}}
				if rng.IntN(3) == 0 {
					chunks[i].Heading = vocab[rng.IntN(len(vocab))]
				}
			}
			if err := s.FinishFile(ctx, id, chunks, agent.FileProcessed, ""); err != nil {
				t.Fatal(err)
			}
		}
		reference := func(files []string, query string, limit int) []int64 {
			terms := queryTerms(query)
			var got []int64
			var err error
			if s.postgres {
				tsq := strings.Join(terms, " | ")
				err = s.r.Raw(`SELECT c.id FROM file_chunk c WHERE c.file_id IN ? AND c.tsv @@ to_tsquery('simple', ?)
					ORDER BY ts_rank(c.tsv, to_tsquery('simple', ?)) DESC, c.id LIMIT ?`, files, tsq, tsq, limit).Scan(&got).Error
			} else {
				quoted := make([]string, len(terms))
				for i, w := range terms {
					quoted[i] = `"` + w + `"`
				}
				err = s.r.Raw(`SELECT chunk_fts.rowid FROM chunk_fts JOIN file_chunk c ON c.id = chunk_fts.rowid
					WHERE chunk_fts MATCH ? AND c.file_id IN ? ORDER BY bm25(chunk_fts), chunk_fts.rowid LIMIT ?`, strings.Join(quoted, " OR "), files, limit).Scan(&got).Error
			}
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		for _, c := range []struct {
			files []string
			query string
			limit int
		}{
			{ids, "alpha", 10},
			{ids, "beta gamma delta", 10},
			{ids[1:3], "beta gamma delta", 10},
			{ids[2:3], "Eta, theta? iota", 50},
			{[]string{"file-e", "file-a"}, "kappa mu omicron rho tau", 7},
			{ids, "nothing matches", 10},
		} {
			want := reference(c.files, c.query, c.limit)
			for range 7 {
				ps, err := s.KeywordChunks(ctx, c.files, c.query, c.limit)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]int64, len(ps))
				for i, p := range ps {
					got[i] = p.ChunkID
					if !slices.Contains(c.files, p.FileID) {
						t.Fatalf("%q in %q: chunk %d of %q", c.query, c.files, p.ChunkID, p.FileID)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%q in %q: %v, want %v", c.query, c.files, got, want)
				}
			}
		}
		if s.postgres {
			var storage []string
			if err := s.r.Raw(`SELECT attname || '=' || attstorage::text FROM pg_attribute WHERE attrelid = 'file_chunk'::regclass AND attname IN ('tsv', 'vector') ORDER BY attname`).Scan(&storage).Error; err != nil {
				t.Fatal(err)
			}
			if want := []string{"tsv=m", "vector=e"}; !slices.Equal(storage, want) {
				t.Errorf("file_chunk's storage: %v, want %v", storage, want)
			}
		}
	})
}
