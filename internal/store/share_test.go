package store

import (
	"errors"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Share links on both databases and in both modes: a link is found by its
// token's hash only, listed for its owner, deleted once (then not_found),
// and deleting its conversation deletes its links in that transaction.
func TestShareRows(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeFast, ModePlain} {
		t.Run(string(mode), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, dsn string) {
				s := open(t, dsn, Options{Mode: mode})
				ctx := t.Context()
				mustAppend(t, s, ownedRec("c1", "plans", "ann"), ownedRec("c2", "other", "ann"))
				at := time.Now().UTC().Truncate(time.Millisecond)
				exp := at.Add(time.Hour)
				a := agent.Share{ID: "shr_a", ConversationID: "c1", Owner: "ann", Title: "plans", Head: "m1", Seq: 3, CreatedAt: at, ExpiresAt: &exp}
				b := agent.Share{ID: "shr_b", ConversationID: "c2", Owner: "ann", Title: "other", Head: "m2", Seq: 4, CreatedAt: at.Add(time.Second)}
				for _, sh := range []struct {
					s    agent.Share
					hash string
				}{{a, "hash-a"}, {b, "hash-b"}} {
					if err := s.CreateShare(ctx, sh.s, sh.hash); err != nil {
						t.Fatal(err)
					}
				}
				got, err := s.ShareByHash(ctx, "hash-a")
				if err != nil || got.ID != "shr_a" || got.Head != "m1" || got.Seq != 3 || got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) {
					t.Fatalf("by hash: %+v, %v", got, err)
				}
				if _, err := s.ShareByHash(ctx, "shr_a"); !errors.Is(err, agent.ErrNotFound) {
					t.Fatalf("by id as hash: %v", err)
				}
				if l, err := s.Shares(ctx, "ann"); err != nil || len(l) != 2 || l[0].ID != "shr_b" {
					t.Fatalf("ann's: %+v, %v", l, err)
				}
				if l, err := s.Shares(ctx, "bob"); err != nil || len(l) != 0 {
					t.Fatalf("bob's: %+v, %v", l, err)
				}
				if err := s.DeleteShare(ctx, "shr_b"); err != nil {
					t.Fatal(err)
				}
				if err := s.DeleteShare(ctx, "shr_b"); !errors.Is(err, agent.ErrNotFound) {
					t.Fatalf("deleted twice: %v", err)
				}
				mustAppend(t, s, deletedRec("c1"))
				if _, err := s.ShareByHash(ctx, "hash-a"); !errors.Is(err, agent.ErrNotFound) {
					t.Fatalf("the link of a deleted conversation: %v", err)
				}
			})
		})
	}
}
