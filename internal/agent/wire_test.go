package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// startingTools is one tool server still starting: it lists no tools yet.
type startingTools struct{}

func (startingTools) Specs(context.Context) []agent.ToolSpec { return nil }

func (startingTools) Call(context.Context, string, string) (string, error) {
	return "", errors.New("the server is starting")
}

func (startingTools) Servers() []agent.ToolServer {
	return []agent.ToolServer{{Name: "slow", Transport: "stdio", State: agent.ToolServerStarting}}
}

// TestAgentToolsNameAStartingServer: an agent's tool pattern may name a
// tool server whose tools are not listed yet, with the tools as app.Wire
// wires them for the runner (inside their metrics and spans), which is
// how cmd/agentik runs them; a server no one configured is refused.
func TestAgentToolsNameAStartingServer(t *testing.T) {
	t.Parallel()
	g := newRig(t, startingTools{})
	ctx := context.Background()
	slug, tools := "helper", []string{"slow__*"}
	if _, err := g.as.Create(ctx, agent.AgentChange{Slug: &slug, Tools: &tools}); err != nil {
		t.Fatalf("an agent of the starting server's tools: %v", err)
	}
	other, unknown := "other", []string{"nowhere__*"}
	if _, err := g.as.Create(ctx, agent.AgentChange{Slug: &other, Tools: &unknown}); agent.ErrorCode(err) != agent.CodeBadRequest {
		t.Fatalf("an agent of an unknown server's tools: %v, want bad_request", err)
	}
}
