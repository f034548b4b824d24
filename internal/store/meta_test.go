package store

import (
	"errors"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// A durable reader's cursor is absent until set, then replaced in place.
func TestCursor(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		if _, err := s.Cursor(ctx, "webhook:x"); !errors.Is(err, agent.ErrNotFound) {
			t.Fatalf("unset cursor: %v, want not found", err)
		}
		for _, v := range []string{"3:3", "7:9"} {
			if err := s.SetCursor(ctx, "webhook:x", v); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Cursor(ctx, "webhook:x"); err != nil || got != v {
				t.Fatalf("cursor = %q, %v; want %q", got, err, v)
			}
		}
		if s.Epoch() == "" {
			t.Error("the epoch was lost beside the cursor")
		}
	})
}
