package telemetry

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestWatchedSkipsTokens: the turn watcher decodes only the events it
// counts; a streamed token (append_text) and other progress pass undecoded.
func TestWatchedSkipsTokens(t *testing.T) {
	conv := func(typ string) agent.Encoded {
		return agent.Encoded{Kind: agent.KindConversation, Type: typ, ConversationID: "c1"}
	}
	for _, tc := range []struct {
		e    agent.Encoded
		want bool
	}{
		{agent.Encoded{Kind: agent.KindAgent, Type: agent.AgentTurnStarted}, true},
		{agent.Encoded{Kind: agent.KindAgent, Type: agent.AgentDeleted}, true},
		{agent.Encoded{Kind: agent.KindAgent, Type: agent.AgentRenamed}, false},
		{conv(agent.EventMessage), true},
		{conv(agent.EventError), true},
		{conv(agent.EventInterrupted), true},
		{conv(agent.EventEnd), true},
		{conv(agent.EventAppendText), false},
		{conv(agent.EventStartResponse), false},
		{agent.Encoded{Kind: "future", Type: "future"}, false},
	} {
		if got := watched(tc.e); got != tc.want {
			t.Errorf("watched(%s %s) = %v, want %v", tc.e.Kind, tc.e.Type, got, tc.want)
		}
	}
}
