package agent_test

import (
	"context"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// noOwners is an OwnerLister with nobody's conversations.
type noOwners struct{}

func (noOwners) ConversationsOf(context.Context, string, []string, int, int) ([]agent.Conversation, int, error) {
	return nil, 0, nil
}

// The services name the abilities they need: a required one missing fails
// their constructor (so app.Wire fails at start), an optional one missing
// answers unavailable (or, for the list's version, uncacheable), never a
// type assertion's surprise in a request.
func TestServicesNameTheirAbilities(t *testing.T) {
	t.Parallel()
	r := agent.NewRunner(agent.Config{})
	if _, err := agent.NewConversations(agent.ConversationsConfig{Runner: r}); err == nil {
		t.Error("NewConversations without an OwnerLister: no error")
	}
	if _, err := agent.NewAgents(agent.AgentsConfig{Runner: r}); err == nil {
		t.Error("NewAgents without an AgentStore: no error")
	}
	if _, err := agent.NewMemory(nil, nil); err == nil {
		t.Error("NewMemory without the Runner: no error")
	}
	cs, err := agent.NewConversations(agent.ConversationsConfig{Runner: r, Lister: noOwners{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cs.ListVersion(); ok {
		t.Error("ListVersion without Versions: cacheable")
	}
	if _, err := cs.Import(ann, []agent.ImportConversation{{Source: "x"}}); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Errorf("Import without Sources: %v, want unavailable", err)
	}
	if _, err := cs.Search(ann, agent.SearchQuery{Terms: []string{"x"}}); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Errorf("Search without a Searcher: %v, want unavailable", err)
	}
	if list, total, err := cs.List(ann, 0, 10); err != nil || total != 0 || len(list) != 0 {
		t.Errorf("List over an empty lister: %v %d %v", list, total, err)
	}
	mem, err := agent.NewMemory(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Blocks(ann, ""); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Errorf("Memory off: %v, want unavailable", err)
	}
}

// ModelConfigured asks Config.Configured (llm.Live: the admin panel may
// leave the server without a provider), and is false without a model.
func TestModelConfiguredAsksConfigured(t *testing.T) {
	t.Parallel()
	on := true
	r := agent.NewRunner(agent.Config{Model: stubModel{}, Configured: func() bool { return on }})
	if !r.ModelConfigured() {
		t.Error("configured model: ModelConfigured false")
	}
	on = false
	if r.ModelConfigured() {
		t.Error("Configured false: ModelConfigured true")
	}
	if agent.NewRunner(agent.Config{Configured: func() bool { return true }}).ModelConfigured() {
		t.Error("no model: ModelConfigured true")
	}
}

// stubModel is a Model that is never called.
type stubModel struct{}

func (stubModel) Chat(context.Context, agent.ChatRequest, func(agent.Delta) error) (agent.ChatResponse, error) {
	return agent.ChatResponse{}, nil
}
