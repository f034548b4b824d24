package store

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestRenameAgent: on both backends, RenameAgent moves every version, the
// latest row, the conversations and the delegations that name the agent,
// in one transaction; a stale version changes nothing.
func TestRenameAgent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		w := agent.AgentDef{Slug: "writer", Name: "w", Owner: "ann", Visibility: agent.VisibilityPrivate, Tools: []string{}, Version: 1, CreatedAt: at, UpdatedAt: at}
		w2 := w
		w2.Version, w2.Description = 2, "second"
		for _, d := range []agent.AgentDef{w, w2,
			{Slug: "editor", Name: "e", Owner: "ann", Visibility: agent.VisibilityPrivate, Tools: []string{"agent__writer", "agent__writers"}, Version: 1}} {
			if err := s.SaveAgent(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		rec := createdRec("c1", "draft")
		rec.Conversation.Agent = "writer"
		rec.Event.Agent.Agent = "writer"
		mustAppend(t, s, rec)

		moved := w2
		moved.Slug, moved.RenamedFrom, moved.Version = "writer-2", "writer", 3
		stale := moved
		stale.Version = 2
		if err := s.RenameAgent(ctx, "writer", stale); !errors.Is(err, agent.ErrConflict) {
			t.Fatalf("a stale rename: %v, want conflict", err)
		}
		if _, err := s.Agent(ctx, "writer"); err != nil {
			t.Fatalf("after a refused rename writer is gone: %v", err)
		}
		if err := s.RenameAgent(ctx, "writer", moved); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Agent(ctx, "writer"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("writer after the rename: %v, want not found", err)
		}
		for v, desc := range map[int]string{1: "", 2: "second", 3: "second"} {
			d, err := s.AgentVersion(ctx, "writer-2", v)
			if err != nil || d.Slug != "writer-2" || d.Description != desc {
				t.Errorf("writer-2 version %d: %+v %v", v, d, err)
			}
		}
		if d, err := s.Agent(ctx, "writer-2"); err != nil || d.Version != 3 || d.RenamedFrom != "writer" {
			t.Errorf("writer-2: %+v %v", d, err)
		}
		if e, err := s.Agent(ctx, "editor"); err != nil || e.Version != 2 || !slices.Equal(e.Tools, []string{"agent__writer-2", "agent__writers"}) {
			t.Errorf("editor: %+v %v", e, err)
		}
		if c, err := s.Conversation(ctx, "c1"); err != nil || c.Agent != "writer-2" {
			t.Errorf("conversation: %+v %v", c, err)
		}
	})
}
