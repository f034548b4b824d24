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
