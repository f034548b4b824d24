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
	if _, err := g.r.CreateAgent(ann, agent.AgentChange{Slug: ptr("researcher")}); err != nil {
		t.Fatal(err)
	}
	d, err := g.r.CreateAgent(bob, agent.AgentChange{Slug: ptr("researcher")})
	if err != nil || d.Slug != "researcher-2" || d.Owner != "bob" {
		t.Fatalf("bob's researcher: %+v %v, want it made as researcher-2", d, err)
	}
	if _, err := g.r.CreateAgent(bob, agent.AgentChange{Slug: ptr("researcher-2")}); agent.ErrorCode(err) != agent.CodeConflict {
		t.Errorf("bob's own slug again: %v, want conflict", err)
	}
	if got, err := g.r.Agent(ann, "researcher"); err != nil || got.Owner != "ann" {
		t.Errorf("ann's researcher: %+v %v", got, err)
	}
}
