package store

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentik/agentik/internal/agent"
)

// TestDecodeEventMatchesAgent: decodeEvent gives exactly what agent's own
// decoder gives, for every known type with every field set, and for the odd
// and unknown payloads it hands over to agent.
func TestDecodeEventMatchesAgent(t *testing.T) {
	date := time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	usage := &agent.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}
	conv := func(e agent.Event) agent.AllEvent {
		return agent.AllEvent{Kind: agent.KindConversation, Seq: 9, ID: "e1", Date: date, ConversationID: "c1", Event: &e}
	}
	agentEv := func(typ, title string) agent.AllEvent {
		return agent.AllEvent{Kind: agent.KindAgent, Seq: 9, ID: "e1", Date: date, ConversationID: "c1",
			Agent: &agent.AgentEvent{Type: typ, ConversationID: "c1", Title: title}}
	}
	msg := &agent.Message{Type: agent.MessageAssistant, ID: "m1", ConversationID: "c1", Seq: 9, Date: date,
		Content:   []agent.Content{agent.Text("a"), {Type: agent.ContentImage, Mime: "image/png", Data: "AA=="}},
		Reasoning: "r", Interrupted: true, Usage: usage}
	events := []agent.AllEvent{
		agentEv(agent.AgentCreated, "t"), agentEv(agent.AgentRenamed, "t2"), agentEv(agent.AgentDeleted, ""),
		func() agent.AllEvent {
			e := agentEv(agent.AgentUpdated, "t3")
			model, prompt, temp := "p/m", "", 0.5
			e.Agent.Model, e.Agent.SystemPrompt, e.Agent.Params = &model, &prompt, &agent.Params{Temperature: &temp}
			return e
		}(),
		conv(agent.Event{Type: agent.EventMessage, Message: msg}),
		conv(agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageUser, ID: "m2", ConversationID: "c1", Date: date, Content: []agent.Content{agent.Text("q")}, ClientID: "k"}}),
		conv(agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageError, ID: "m3", ConversationID: "c1", Date: date, Error: "boom", Code: agent.CodeModelError}}),
		conv(agent.Event{Type: agent.EventStartReasoning}),
		conv(agent.Event{Type: agent.EventStartResponse}),
		conv(agent.Event{Type: agent.EventAppendText, Text: "tok"}),
		conv(agent.Event{Type: agent.EventAppendImage, Mime: "image/png", Data: "AA=="}),
		conv(agent.Event{Type: agent.EventToolCall, CallID: "t1", Name: "s__x", Arguments: `{"a":1}`}),
		conv(agent.Event{Type: agent.EventToolResult, CallID: "t1", Name: "s__x", Result: "42", IsError: true}),
		conv(agent.Event{Type: agent.EventError, Error: "bad", Code: agent.CodeToolError}),
		conv(agent.Event{Type: agent.EventInterrupted}),
		conv(agent.Event{Type: agent.EventQueued, MessageID: "m4", Content: []agent.Content{agent.Text("later")}, Position: 2}),
		conv(agent.Event{Type: agent.EventQueueCancelled, MessageID: "m4"}),
		conv(agent.Event{Type: agent.EventApprovalRequest, CallID: "t2", Name: "s__w", Arguments: `{"p":1}`}),
		conv(agent.Event{Type: agent.EventApproval, CallID: "t2", Decision: "approve", Arguments: `{"p":2}`}),
		conv(agent.Event{Type: agent.EventApproval, CallID: "t3", Decision: "deny", Reason: "no"}),
		conv(agent.Event{Type: agent.EventEnd, Usage: usage}),
		conv(agent.Event{Type: agent.EventEnd}),
	}
	var payloads []string
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, string(b))
	}
	payloads = append(payloads,
		`{"type":"conversation","seq":1,"id":"e","date":"2026-01-01T00:00:00.000Z","conversation_id":"c","event":{"type":"hologram","depth":3}}`,
		`{"type":"agent","seq":1,"id":"e","date":"2026-01-01T00:00:00Z","event":{"type":"archived","conversation_id":"c"}}`,
		`{"type":"telepathy","seq":1,"id":"e"}`,
		`{"type":"conversation","seq":1,"id":"e","date":"","conversation_id":"c","event":{"type":"error"}}`,
		`{"type":"conversation","seq":1,"id":"e","date":"2026-01-01T00:00:00Z","conversation_id":"c","event":{"type":"message","message":null}}`,
		`{"type":"conversation","seq":1,"id":"e","date":"yesterday","conversation_id":"c","event":{"type":"end"}}`,
		`{"type":"agent","seq":1,"id":"e"}`,
		`not json`,
		`{"type":"agent","seq":1,"id":"e","date":"2026-01-01T00:00:00Z","event":{"type":"created","conversation_id":"c","server":{"name":"x"}}}`,
		`{"type":"agent","seq":1,"id":"e","date":"2026-01-01T00:00:00Z","event":{"type":"tool_server","server":{"name":"x","state":"ready"}}}`,
	)
	for _, p := range payloads {
		var want agent.AllEvent
		wantErr := json.Unmarshal([]byte(p), &want)
		var got agent.AllEvent
		err := decodeEvent([]byte(p), &got)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, agent's decoder: %v", p, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-agent +decodeEvent):\n%s", p, diff)
		}
	}
	for _, ev := range events[:len(events)-1] {
		b, _ := json.Marshal(ev)
		var got agent.AllEvent
		if !fastDecode(b, &got) {
			t.Errorf("known event %s/%s took the slow path", ev.Kind, ev.EventType())
		}
	}
}

// TestDecodeEventKnowsAllFields fails when agent's event types change: then
// decode.go must learn the change (and the list below with it).
func TestDecodeEventKnowsAllFields(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeFor[agent.AllEvent]():   {"Kind", "Seq", "ID", "Date", "ConversationID", "Agent", "Event", "Raw"},
		reflect.TypeFor[agent.AgentEvent](): {"Type", "ConversationID", "Title", "Model", "SystemPrompt", "Params", "Head", "Server", "Raw"},
		reflect.TypeFor[agent.Event](): {"Type", "Message", "Text", "Mime", "Data", "CallID", "Name", "Arguments",
			"Result", "IsError", "Error", "Code", "Usage", "MessageID", "Content", "Position", "Decision", "Reason", "Raw"},
	}
	for typ, want := range known {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has fields %v; decode.go knows %v: update storedEvent/fastDecode", typ, got, want)
		}
	}
}
