package store

import (
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
