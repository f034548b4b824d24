package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestEncodedSlicesTheOneEncoding: the inner event is a slice of the
// AllEvent's JSON, equal to encoding the inner event alone, and the
// stored form finds the same type and slice without decoding.
func TestEncodedSlicesTheOneEncoding(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC)
	evs := []agent.AllEvent{
		{Kind: agent.KindConversation, Seq: 7, ID: "e7", Date: date, ConversationID: "c1",
			Event: &agent.Event{Type: agent.EventAppendText, Text: `a ,"event":{"type":"x"} \" quote`}},
		{Kind: agent.KindConversation, Seq: 8, ID: "e8", Date: date, ConversationID: "c1",
			Event: &agent.Event{Type: agent.EventError, Error: "boom", Code: agent.CodeModelError}},
		{Kind: agent.KindAgent, Seq: 9, ID: "e9", Date: date, ConversationID: "c1",
			Agent: &agent.AgentEvent{Type: agent.AgentRenamed, ConversationID: "c1", Title: `"event":`}},
	}
	for _, ev := range evs {
		e, err := agent.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		whole, _ := json.Marshal(ev)
		inner, _ := json.Marshal(ev.Inner())
		if string(e.JSON) != string(whole) || string(e.Inner()) != string(inner) || e.Type != ev.EventType() || e.Seq != ev.Seq || e.ID != ev.ID {
			t.Errorf("Encode(%s) = %+v, inner %s, want inner %s", whole, e, e.Inner(), inner)
		}
		s := agent.StoredEvent(ev.Seq, ev.ID, ev.Kind, ev.ConversationID, whole)
		if string(s.Inner()) != string(inner) || s.Type != e.Type || s.Kind != e.Kind || s.ConversationID != e.ConversationID {
			t.Errorf("StoredEvent(%s) = %+v, inner %s", whole, s, s.Inner())
		}
		if back, err := s.Decode(); err != nil || back.Seq != ev.Seq || back.EventType() != ev.EventType() {
			t.Errorf("Decode(%s) = %+v, %v", whole, back, err)
		}
	}
	// A type written with an escape is read by a decode, not the scan.
	s := agent.StoredEvent(1, "e1", agent.KindConversation, "c1", []byte(`{"type":"conversation","seq":1,"event":{"type":"\u0065nd"}}`))
	if s.Type != agent.EventEnd || !s.IsEnd() {
		t.Errorf("escaped type: %+v", s)
	}
	// An unknown kind has no inner event; its type is its kind.
	u := agent.StoredEvent(2, "e2", "future", "", []byte(`{"type":"future","seq":2}`))
	if u.Inner() != nil || u.Type != "future" {
		t.Errorf("unknown kind: %+v", u)
	}
}

// TestEncodedMessageType: the message type read by the scan agrees with
// the decoded message for every type, in the codec's layout and in bytes
// laid out otherwise (decoded), and is "" for an event that holds no
// message.
func TestEncodedMessageType(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{agent.MessageUser, agent.MessageAssistant, agent.MessageSummary, agent.MessageToolCall} {
		m := agent.Message{Type: typ, ID: "m", Content: []agent.Content{agent.Text(`{"type":"user_message"}`)}}
		e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: 5, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: agent.EventMessage, Message: &m}})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.MessageType(); got != typ {
			t.Errorf("encoded %s: MessageType %q", typ, got)
		}
	}
	head := `{"type":"conversation","seq":5,"id":"x","date":"2026-12-01T00:00:00Z","conversation_id":"c","event":`
	for inner, want := range map[string]string{
		`{"type":"message","message":{"id":"m","type":"summary_message","content":[]}}`:   agent.MessageSummary,
		`{"type":"message","message":{"type":"user\u005fmessage","content":[]}}`:          agent.MessageUser,
		`{"type":"append_text","text":"{\"type\":\"message\",\"message\":{\"type\":\"x"}`: "",
	} {
		if got := agent.StoredEvent(5, "x", agent.KindConversation, "c", []byte(head+inner+"}")).MessageType(); got != want {
			t.Errorf("%s: MessageType %q, want %q", inner, got, want)
		}
	}
	end, _ := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: "c", Event: &agent.Event{Type: agent.EventEnd}})
	if got := end.MessageType(); got != "" {
		t.Errorf("end event: MessageType %q", got)
	}
}
