package a2a

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// messagePrefix is what agent.Encoded.MessageType scans for: the codec's
// layout of a message event.
var messagePrefix = []byte(`{"type":"message","message":{"type":"`)

// TestStartsTurn: the push deliverer's scan for a turn's start agrees
// with the decoded message, for the codec's layout (the scan) and any
// other (decoded).
func TestStartsTurn(t *testing.T) {
	decoded := func(e *agent.Encoded) bool {
		ev, err := e.Decode()
		return err == nil && ev.Event != nil && ev.Event.Message != nil && ev.Event.Message.Type == agent.MessageUser
	}
	check := func(name string, e agent.Encoded, want, scanned bool) {
		t.Helper()
		if got := startsTurn(&e); got != want || decoded(&e) != want {
			t.Errorf("%s: startsTurn %v, decoded %v, want %v", name, got, decoded(&e), want)
		}
		if got := strings.HasPrefix(string(e.Inner()), string(messagePrefix)); got != scanned {
			t.Errorf("%s: read by the scan %v, want %v: %s", name, got, scanned, e.JSON)
		}
	}
	for _, m := range []agent.Message{
		{Type: agent.MessageUser, ID: "m1", Content: []agent.Content{agent.Text("hello")}, ClientID: "c"},
		{Type: agent.MessageAssistant, ID: "m2", Content: []agent.Content{agent.Text(strings.Repeat(" t1", 1000))}},
		{Type: agent.MessageToolCall, ID: "m3", CallID: "k", Name: "n", Arguments: `{"type":"user_message"}`},
	} {
		e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: 5, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: agent.EventMessage, Message: &m}})
		if err != nil {
			t.Fatal(err)
		}
		check(m.Type, e, m.Type == agent.MessageUser, true)
	}
	head := `{"type":"conversation","seq":5,"id":"x","date":"2026-12-01T00:00:00Z","conversation_id":"c","event":`
	for name, tt := range map[string]struct {
		inner string
		want  bool
	}{
		"type after id":      {`{"type":"message","message":{"id":"m","type":"user_message","content":[]}}`, true},
		"spaced":             {`{"type":"message", "message":{"type":"user_message","content":[]}}`, true},
		"an escaped type":    {`{"type":"message","message":{"type":"user\u005fmessage","content":[]}}`, true},
		"an assistant after": {`{"type":"message","message":{"id":"m","type":"assistant_message","content":[]}}`, false},
	} {
		e := agent.StoredEvent(5, "x", agent.KindConversation, "c", []byte(head+tt.inner+"}"))
		check(name, e, tt.want, strings.HasPrefix(tt.inner, string(messagePrefix)))
	}
}
