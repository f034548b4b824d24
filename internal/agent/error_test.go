package agent_test

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestFailureText: a coded failure reads "code: message", one without a
// code its message alone (A2A's failed task, MCP's failed call).
func TestFailureText(t *testing.T) {
	if got := agent.FailureText(agent.CodeQuotaExceeded, "over budget"); got != "quota_exceeded: over budget" {
		t.Errorf("coded: %q", got)
	}
	if got := agent.FailureText("", "the model failed"); got != "the model failed" {
		t.Errorf("without a code: %q", got)
	}
}
