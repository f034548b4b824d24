package agent_test

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestAnothersPrivateSlugNotRevealed: creating an agent with a slug
// another member's private agent holds answers as for a free slug (the
// agent is made under the first free suffixed slug), not conflict; a
// slug the caller can see still answers conflict.
func TestAnothersPrivateSlugNotRevealed(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	if _, err := g.as.Create(ann, agent.AgentChange{Slug: ptr("researcher")}); err != nil {
		t.Fatal(err)
	}
	d, err := g.as.Create(bob, agent.AgentChange{Slug: ptr("researcher")})
	if err != nil || d.Slug != "researcher-2" || d.Owner != "bob" {
		t.Fatalf("bob's researcher: %+v %v, want it made as researcher-2", d, err)
	}
	if _, err := g.as.Create(bob, agent.AgentChange{Slug: ptr("researcher-2")}); agent.ErrorCode(err) != agent.CodeConflict {
		t.Errorf("bob's own slug again: %v, want conflict", err)
	}
	if got, err := g.as.Get(ann, "researcher"); err != nil || got.Owner != "ann" {
		t.Errorf("ann's researcher: %+v %v", got, err)
	}
}

// TestAgentSlugFromName: an agent made with a name and no slug gets the
// slug of its name, with a suffix when that slug is taken (here by the
// caller's own agent: no conflict, as the person gave no slug); a name
// without a letter or digit and no slug is bad_request.
func TestAgentSlugFromName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"Travel Planner": "travel-planner", "  Été -- 2026!": "t-2026", "ABC": "abc", "!!!": ""} {
		if got := agent.SlugOf(name); got != want {
			t.Errorf("SlugOf(%q) = %q, want %q", name, got, want)
		}
	}
	g := newRig(t, nil)
	d, err := g.as.Create(ann, agent.AgentChange{Name: ptr("Travel Planner")})
	if err != nil || d.Slug != "travel-planner" || d.Name != "Travel Planner" {
		t.Fatalf("first: %+v %v", d, err)
	}
	if d, err = g.as.Create(ann, agent.AgentChange{Name: ptr("Travel planner")}); err != nil || d.Slug != "travel-planner-2" {
		t.Fatalf("second: %+v %v, want travel-planner-2", d, err)
	}
	if _, err := g.as.Create(ann, agent.AgentChange{Name: ptr("!!!")}); agent.ErrorCode(err) != agent.CodeBadRequest {
		t.Errorf("a name without letters: %v, want bad_request", err)
	}
}
