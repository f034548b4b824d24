package telemetry

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// message is a stored message event holding a message of typ.
func message(t *testing.T, typ string) agent.Encoded {
	t.Helper()
	m := agent.Message{Type: typ, ID: "m", Content: []agent.Content{agent.Text("text")}}
	e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: "c1", Event: &agent.Event{Type: agent.EventMessage, Message: &m}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestWatchedSkipsTokens: the turn watcher decodes only the events it
// counts; a streamed token (append_text), other progress and a message
// other than a summary (a turn's whole answer) pass undecoded.
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
		{message(t, agent.MessageSummary), true},    // counted as a compaction
		{message(t, agent.MessageAssistant), false}, // a turn's answer: passed undecoded
		{message(t, agent.MessageUser), false},
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
