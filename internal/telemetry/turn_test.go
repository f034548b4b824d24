package telemetry

import (
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestWatchedSkipsOnlyWhatSeeIgnores: WatchTurns decodes only the events
// watched accepts; every conversation event it skips leaves the watch as
// it was (no open turn, no metric: a nil Metrics would panic), and the
// turn's start, end and outcome events are watched.
func TestWatchedSkipsOnlyWhatSeeIgnores(t *testing.T) {
	types := []string{agent.EventMessage, agent.EventStartReasoning, agent.EventStartResponse, agent.EventAppendText,
		agent.EventAppendImage, agent.EventToolCall, agent.EventToolResult, agent.EventError, agent.EventInterrupted,
		agent.EventEnd, agent.EventQueued, agent.EventQueueCancelled, agent.EventApprovalRequest, agent.EventApproval,
		agent.EventDelegation, agent.EventMemoryUpdated}
	skipped := 0
	for _, typ := range types {
		ev := agent.AllEvent{Kind: agent.KindConversation, ConversationID: "c", Date: time.Unix(1, 0), Event: &agent.Event{Type: typ}}
		enc, err := agent.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if watched(&enc) {
			continue
		}
		skipped++
		w := turnWatch{open: map[string]*openTurn{}} // m nil: any metric panics
		w.see(ev)
		if len(w.open) != 0 {
			t.Errorf("%s is skipped, but see opens a turn on it", typ)
		}
	}
	if skipped == 0 {
		t.Error("watched skips nothing: every delta is decoded")
	}
	for _, typ := range []string{agent.EventEnd, agent.EventError, agent.EventInterrupted, agent.EventMessage} {
		enc, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, ConversationID: "c", Event: &agent.Event{Type: typ}})
		if err != nil {
			t.Fatal(err)
		}
		if !watched(&enc) {
			t.Errorf("%s is not watched", typ)
		}
	}
	enc, err := agent.Encode(agent.AllEvent{Kind: agent.KindAgent, Agent: &agent.AgentEvent{Type: agent.AgentTurnStarted, ConversationID: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if !watched(&enc) {
		t.Error("turn_started is not watched")
	}
}
