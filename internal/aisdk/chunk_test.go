package aisdk

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// types is the chunks' types, with ids where they have one.
func types(cs []chunk) string {
	var out []string
	for _, c := range cs {
		s := c.Type
		if c.ID != "" {
			s += ":" + c.ID
		}
		if c.ToolCallID != "" {
			s += ":" + c.ToolCallID
		}
		if c.FinishReason != "" {
			s += ":" + c.FinishReason
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func run(p *projection, evs ...agent.Event) []chunk {
	var out []chunk
	for i := range evs {
		out = append(out, p.on(&evs[i])...)
	}
	return out
}

func TestProjection(t *testing.T) {
	user := &agent.Message{Type: agent.MessageUser}
	answer := &agent.Message{Type: agent.MessageAssistant}
	u := &agent.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}
	for _, tc := range []struct {
		name string
		evs  []agent.Event
		want string
	}{
		{"reasoning, a tool, an answer", []agent.Event{
			{Type: agent.EventMessage, Message: user},
			{Type: agent.EventStartReasoning}, {Type: agent.EventAppendText, Text: "hm"},
			{Type: agent.EventToolCall, CallID: "c1", Name: "s__t", Arguments: `{"a":1}`},
			{Type: agent.EventMessage, Message: answer},
			{Type: agent.EventToolResult, CallID: "c1", Result: "ok"},
			{Type: agent.EventStartResponse}, {Type: agent.EventAppendText, Text: "do"}, {Type: agent.EventAppendText, Text: "ne"},
			{Type: agent.EventMessage, Message: answer},
			{Type: agent.EventEnd, Usage: u},
		}, "start-step reasoning-start:reasoning-1 reasoning-delta:reasoning-1 reasoning-end:reasoning-1 tool-input-start:c1 tool-input-available:c1 " +
			"tool-output-available:c1 finish-step start-step text-start:text-2 text-delta:text-2 text-delta:text-2 text-end:text-2 finish-step finish:stop"},
		{"a denied call", []agent.Event{
			{Type: agent.EventToolCall, CallID: "c1", Name: "s__t"},
			{Type: agent.EventApprovalRequest, CallID: "c1", Name: "s__t"},
			{Type: agent.EventApproval, CallID: "c1", Decision: agent.DecisionDeny, Reason: "no"},
			{Type: agent.EventToolResult, CallID: "c1", Result: "the user denied this tool call: no", IsError: true},
			{Type: agent.EventEnd},
		}, "start-step tool-input-start:c1 tool-input-available:c1 tool-approval-request:c1 tool-output-denied:c1 finish-step finish:stop"},
		{"a failed tool, then a failed turn", []agent.Event{
			{Type: agent.EventToolCall, CallID: "c1", Name: "s__t"},
			{Type: agent.EventToolResult, CallID: "c1", Result: "boom", IsError: true},
			{Type: agent.EventError, Error: "model down", Code: agent.CodeModelError},
			{Type: agent.EventEnd},
		}, "start-step tool-input-start:c1 tool-input-available:c1 tool-output-error:c1 error finish-step finish:error"},
		{"interrupted mid-answer", []agent.Event{
			{Type: agent.EventStartResponse}, {Type: agent.EventAppendText, Text: "par"},
			{Type: agent.EventInterrupted}, {Type: agent.EventEnd},
		}, "start-step text-start:text-1 text-delta:text-1 text-end:text-1 finish-step finish:other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProjection("turn-1")
			if got := types(run(p, tc.evs...)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !p.done {
				t.Error("not done after end")
			}
		})
	}
}

// TestProjectionParked: a round that waits ends the stream once every
// waiting call was asked, and a replay of the same events is the same
// stream.
func TestProjectionParked(t *testing.T) {
	evs := []agent.Event{
		{Type: agent.EventToolCall, CallID: "c1", Name: "s__t"},
		{Type: agent.EventToolCall, CallID: "c2", Name: "s__u"},
		{Type: agent.EventApprovalRequest, CallID: "c1"},
	}
	p := newProjection("turn-1")
	first := run(p, evs...)
	if cs := p.parked([]string{"c1", "c2"}); cs != nil {
		t.Fatalf("parked before c2 was asked: %s", types(cs))
	}
	more := run(p, agent.Event{Type: agent.EventApprovalRequest, CallID: "c2"})
	end := p.parked([]string{"c1", "c2"})
	if got := types(end); got != "finish-step finish:tool-calls" {
		t.Errorf("parked: %s", got)
	}
	again := newProjection("turn-1")
	a, _ := json.Marshal(append(append(first, more...), end...))
	replayed := append(run(again, append(evs, agent.Event{Type: agent.EventApprovalRequest, CallID: "c2"})...), again.parked([]string{"c1", "c2"})...)
	b, _ := json.Marshal(replayed)
	if string(a) != string(b) {
		t.Errorf("a replay differs:\n%s\n%s", a, b)
	}
}

func TestInput(t *testing.T) {
	for args, want := range map[string]string{"": `{}`, `{"a":1}`: `{"a":1}`, "not json": `"not json"`} {
		if got := string(input(args)); got != want {
			t.Errorf("input(%q) = %s, want %s", args, got, want)
		}
	}
}
