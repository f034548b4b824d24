package store

import (
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Saved prompts and preferences on both databases: a prompt is replaced
// in place, listed by name for its owner and for the projects it is
// shared with, counted and deleted; preferences are per user, zero until
// saved.
func TestSavedPromptsAndPreferences(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		put := func(p agent.SavedPrompt) {
			t.Helper()
			if err := s.PutSavedPrompt(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		put(agent.SavedPrompt{ID: "prompt_b", Owner: "ann", Name: "beta", Text: "b", CreatedAt: at, UpdatedAt: at})
		put(agent.SavedPrompt{ID: "prompt_a", Owner: "ann", Name: "Alpha", Text: "a", CreatedAt: at, UpdatedAt: at})
		put(agent.SavedPrompt{ID: "prompt_c", Owner: "bob", Name: "gamma", Text: "c", Project: "proj_1", CreatedAt: at, UpdatedAt: at})
		put(agent.SavedPrompt{ID: "prompt_b", Owner: "ann", Name: "beta", Text: "b2", CreatedAt: at, UpdatedAt: at.Add(time.Second)})

		list, err := s.SavedPrompts(ctx, "ann", nil)
		if err != nil || len(list) != 2 || list[0].Name != "Alpha" || list[1].Text != "b2" || !list[1].UpdatedAt.Equal(at.Add(time.Second)) {
			t.Fatalf("ann's prompts %+v, %v", list, err)
		}
		if list, err := s.SavedPrompts(ctx, "ann", []string{"proj_1"}); err != nil || len(list) != 3 {
			t.Fatalf("ann's with proj_1 %+v, %v", list, err)
		}
		if n, err := s.CountSavedPrompts(ctx, "ann"); err != nil || n != 2 {
			t.Fatalf("count %d, %v", n, err)
		}
		if _, err := s.SavedPrompt(ctx, "prompt_zzz"); agent.ErrorCode(err) != agent.CodeNotFound {
			t.Fatalf("an unknown prompt: %v", err)
		}
		if err := s.DeleteSavedPrompt(ctx, "prompt_a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SavedPrompt(ctx, "prompt_a"); agent.ErrorCode(err) != agent.CodeNotFound {
			t.Fatalf("a deleted prompt: %v", err)
		}

		if p, err := s.Preferences(ctx, "ann"); err != nil || p != (agent.Preferences{}) {
			t.Fatalf("unsaved preferences %+v, %v", p, err)
		}
		want := agent.Preferences{Theme: agent.ThemeDark, Locale: "de", UpdatedAt: at}
		if err := s.PutPreferences(ctx, "ann", want); err != nil {
			t.Fatal(err)
		}
		want.Theme = agent.ThemeLight
		if err := s.PutPreferences(ctx, "ann", want); err != nil {
			t.Fatal(err)
		}
		if p, err := s.Preferences(ctx, "ann"); err != nil || p != want {
			t.Fatalf("preferences %+v, %v", p, err)
		}
		if p, _ := s.Preferences(ctx, "bob"); p != (agent.Preferences{}) {
			t.Fatalf("bob's %+v", p)
		}
	})
}
