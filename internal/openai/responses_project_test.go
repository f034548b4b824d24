package openai

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// turnEvents is a stored turn: a user message, reasoning, an answer, a
// server-side tool round, a call of a client tool, and the end.
func turnEvents() []agent.AllEvent {
	at := time.Unix(1700000000, 0)
	var seq int64 = 10
	ev := func(e agent.Event) agent.AllEvent {
		seq++
		return agent.AllEvent{Kind: agent.KindConversation, Seq: seq, ID: "e" + string(rune('a'+seq-11)), Date: at, ConversationID: "c1", Event: &e}
	}
	u := agent.Usage{PromptTokens: 5, CompletionTokens: 7, TotalTokens: 12}
	return []agent.AllEvent{
		ev(agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageUser, ID: "m1", Content: []agent.Content{agent.Text("hi")}}}),
		ev(agent.Event{Type: agent.EventStartReasoning}),
		ev(agent.Event{Type: agent.EventAppendText, Text: "think"}),
		ev(agent.Event{Type: agent.EventStartResponse}),
		ev(agent.Event{Type: agent.EventAppendText, Text: "Hel"}),
		ev(agent.Event{Type: agent.EventAppendText, Text: "lo"}),
		ev(agent.Event{Type: agent.EventToolCall, CallID: "t1", Name: "everything__echo", Arguments: `{"message":"x"}`}),
		ev(agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageAssistant, ID: "m2", Usage: &u}}),
		ev(agent.Event{Type: agent.EventToolResult, CallID: "t1", Name: "everything__echo", Result: "Echo: x"}),
		ev(agent.Event{Type: agent.EventToolCall, CallID: "t2", Name: "get_time", Arguments: `{}`}),
		ev(agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageToolCall, ID: "m3", CallID: "t2", Name: "get_time"}}),
		ev(agent.Event{Type: agent.EventEnd, Usage: &u}),
	}
}

func project(evs []agent.AllEvent) (*projector, []StreamEvent) {
	p := newProjector("resp_1", "c1", false, time.Unix(1700000000, 0), Echo{Model: "fake", ClientTools: []string{"get_time"}})
	out := p.start()
	for i := range evs {
		out = append(out, p.on(&evs[i])...)
	}
	return p, out
}

func TestProjectorTurn(t *testing.T) {
	p, out := project(turnEvents())
	var types []string
	for i, ev := range out {
		if ev.SequenceNumber != i {
			t.Fatalf("event %d has sequence_number %d", i, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
	}
	if types[0] != evCreated || types[1] != evInProgress || types[len(types)-1] != evCompleted {
		t.Errorf("events %v", types)
	}
	r := p.snapshot()
	if r.Status != statusCompleted || r.OutputText != "Hello" || r.Usage == nil || r.Usage.TotalTokens != 12 {
		t.Errorf("response %+v", r)
	}
	var kinds []string
	for _, it := range r.Output {
		kinds = append(kinds, it.Type)
	}
	if got := strings.Join(kinds, ","); got != "reasoning,message,mcp_call,function_call" {
		t.Errorf("output items %s", got)
	}
	if r.Output[0].Summary[0].Text != "think" || *r.Output[2].Output != "Echo: x" || r.Output[2].ServerLabel != "everything" || r.Output[3].CallID != "t2" {
		t.Errorf("items %+v %+v %+v", r.Output[0], r.Output[2], r.Output[3])
	}
	if len(p.inputs) != 1 || p.inputs[0].Content[0].Text != "hi" || p.lastMessage != "m3" {
		t.Errorf("inputs %+v, last message %q", p.inputs, p.lastMessage)
	}
	// The same events give the same stream, byte for byte.
	_, again := project(turnEvents())
	a, _ := json.Marshal(out)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("the projection is not deterministic")
	}
}

// A turn that parks on an approval ends its response there; the event
// after the requests belongs to the next response.
func TestProjectorParks(t *testing.T) {
	at := time.Unix(1700000000, 0)
	evs := []agent.AllEvent{
		{Kind: agent.KindConversation, Seq: 1, ID: "a", Date: at, Event: &agent.Event{Type: agent.EventToolCall, CallID: "t1", Name: "s__rm", Arguments: "{}"}},
		{Kind: agent.KindConversation, Seq: 2, ID: "b", Date: at, Event: &agent.Event{Type: agent.EventApprovalRequest, CallID: "t1", Name: "s__rm", Arguments: "{}"}},
		{Kind: agent.KindConversation, Seq: 3, ID: "c", Date: at, Event: &agent.Event{Type: agent.EventApproval, CallID: "t1", Decision: agent.DecisionApprove}},
	}
	p, out := project(evs)
	if !p.done || out[len(out)-1].Type != evCompleted || p.last != 2 {
		t.Fatalf("done %v last %d events %+v", p.done, p.last, out)
	}
	r := p.snapshot()
	if len(r.Output) != 1 || r.Output[0].Type != itemMCPApprovalReq || r.Output[0].ID != "mcpr_t1" || r.Output[0].Name != "rm" {
		t.Errorf("output %+v", r.Output)
	}
}
