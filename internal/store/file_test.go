package store

import (
	"maps"
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
