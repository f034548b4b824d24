package store

import (
	"errors"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestApplyMemoryIsCompareAndSet holds docs/ARCHITECTURE.md's "a change is
// a compare-and-set on the block's previous text": a change made from a
// text the block no longer holds is refused with conflict and writes
// nothing, so two writers never lose each other's change; a change is
// reverted once.
func TestApplyMemoryIsCompareAndSet(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
		change := func(id, previous, value, reverts string) agent.MemoryChange {
			return agent.MemoryChange{ID: id, Owner: "u", Agent: "a", Label: "notes", Op: agent.MemoryOpSet, Summary: value,
				Value: value, Previous: previous, Limit: 100, Reverts: reverts, Date: at}
		}
		refused := func(ch agent.MemoryChange) {
			t.Helper()
			if err := s.ApplyMemory(ctx, ch); !errors.Is(err, errMemoryChanged) {
				t.Errorf("ApplyMemory(%s from %q): %v, want conflict", ch.ID, ch.Previous, err)
			}
		}
		holds := func(want string) {
			t.Helper()
			bs, err := s.MemoryBlocks(ctx, "u", "a")
			if err != nil || len(bs) != 1 || bs[0].Value != want {
				t.Fatalf("blocks %+v, %v; want notes = %q", bs, err, want)
			}
		}
		if err := s.ApplyMemory(ctx, change("m1", "", "one", "")); err != nil {
			t.Fatal(err)
		}
		refused(change("m2", "", "two", ""))      // a second first write: the block exists
		refused(change("m3", "stale", "two", "")) // from a text it never held
		holds("one")
		if err := s.ApplyMemory(ctx, change("m4", "one", "two", "")); err != nil {
			t.Fatal(err)
		}
		refused(change("m5", "one", "three", "")) // the loser of a race, from the old text
		holds("two")
		if err := s.ApplyMemory(ctx, change("m6", "two", "one", "m4")); err != nil {
			t.Fatal(err)
		}
		refused(change("m7", "one", "two", "m4")) // m4 is reverted already
		holds("one")
		for _, id := range []string{"m2", "m3", "m5", "m7"} {
			if _, err := s.MemoryChange(ctx, "u", id); !errors.Is(err, agent.ErrNotFound) {
				t.Errorf("refused change %s: %v, want it not stored", id, err)
			}
		}
	})
}
