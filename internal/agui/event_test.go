package agui

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestStreamIDsAreSnapshotIDs: the messages a run streams carry the ids the
// next run's MESSAGES_SNAPSHOT gives the same messages, so a client that
// merges the snapshot by id holds each message once.
func TestStreamIDsAreSnapshotIDs(t *testing.T) {
	user := agent.Message{Type: agent.MessageUser, ID: "m1", ClientID: "u1", Content: []agent.Content{agent.Text("hi")}}
	first := agent.Message{Type: agent.MessageAssistant, Content: []agent.Content{agent.Text("let me look")}}
	call := agent.Message{Type: agent.MessageToolCall, CallID: "c1", Name: "s__t", Arguments: `{}`}
	result := agent.Message{Type: agent.MessageToolResult, CallID: "c1", Name: "s__t", Result: "42"}
	second := agent.Message{Type: agent.MessageAssistant, Content: []agent.Content{agent.Text("it is 42")}}
	evs := []agent.Event{
		{Type: agent.EventMessage, Message: &user},
		{Type: agent.EventStartReasoning}, {Type: agent.EventAppendText, Text: "hm"},
		{Type: agent.EventStartResponse}, {Type: agent.EventAppendText, Text: "let me look"},
		{Type: agent.EventToolCall, CallID: "c1", Name: "s__t", Arguments: `{}`},
		{Type: agent.EventMessage, Message: &first}, {Type: agent.EventMessage, Message: &call},
		{Type: agent.EventToolResult, CallID: "c1", Name: "s__t", Result: "42"}, {Type: agent.EventMessage, Message: &result},
		{Type: agent.EventStartResponse}, {Type: agent.EventAppendText, Text: "it is 42"}, {Type: agent.EventMessage, Message: &second},
		{Type: agent.EventEnd, Usage: &agent.Usage{TotalTokens: 5}},
	}
	p := newProjection("t", "r", "", 0)
	var types, ids []string
	for i := range evs {
		for _, e := range p.on(&evs[i]) {
			types = append(types, e.Type)
			switch e.Type {
			case textStart:
				ids = append(ids, e.MessageID)
			case toolStart:
				ids = append(ids, e.ParentMessageID)
			case toolResult:
				ids = append(ids, e.MessageID)
			}
		}
	}
	want := "REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT REASONING_MESSAGE_END REASONING_END TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
		"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	snap, last, texts := snapshot([]agent.Message{user, first, call, result, second})
	var snapIDs []string
	for _, m := range snap {
		snapIDs = append(snapIDs, m.ID)
	}
	for _, id := range ids {
		if !slices.Contains(snapIDs, id) {
			t.Errorf("streamed message %s is not in the snapshot %v", id, snapIDs)
		}
	}
	if snapIDs[0] != "u1" || last != "u1" || texts != 2 {
		t.Errorf("snapshot %v, last user %s, texts %d", snapIDs, last, texts)
	}
}

// TestParkedRun: a run whose turn waits ends with an interrupt per waiting
// call once every one was asked; an error ends it with RUN_ERROR only.
func TestParkedRun(t *testing.T) {
	p := newProjection("t", "r", "u1", 0)
	p.on(&agent.Event{Type: agent.EventToolCall, CallID: "c1", Name: "s__t"})
	p.on(&agent.Event{Type: agent.EventApprovalRequest, CallID: "c1", Name: "s__t", Arguments: `{"x":1}`})
	if evs := p.parked([]string{"c1", "c2"}); evs != nil {
		t.Fatalf("parked before c2 was asked: %+v", evs)
	}
	p.on(&agent.Event{Type: agent.EventApprovalRequest, CallID: "c2", Name: "s__u"})
	evs := p.parked([]string{"c1", "c2"})
	if len(evs) != 1 || evs[0].Type != runFinished || evs[0].Outcome.Type != "interrupt" || len(evs[0].Outcome.Interrupts) != 2 ||
		evs[0].Outcome.Interrupts[0].ToolCallID != "c1" || evs[0].Outcome.Interrupts[0].Reason != "tool_call" {
		t.Errorf("parked: %+v", evs)
	}
	q := newProjection("t", "r", "u1", 0)
	errEvs := q.on(&agent.Event{Type: agent.EventError, Error: "model down", Code: agent.CodeModelError})
	if end := q.on(&agent.Event{Type: agent.EventEnd}); len(errEvs) != 1 || errEvs[0].Type != runError || errEvs[0].Code != agent.CodeModelError || end != nil {
		t.Errorf("failed turn: %+v then %+v", errEvs, end)
	}
}
