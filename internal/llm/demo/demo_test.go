package demo

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
)

// TestScript: the first round reasons, says a line and calls the tool with
// the user's text; the round after the tool's answer quotes it in a
// Markdown answer; without the tool offered the answer comes at once.
func TestScript(t *testing.T) {
	user := Message{Role: "user", Content: "count these three"}
	first := Script(Request{Messages: []Message{user}, Tools: []string{ToolName}})
	if first.Reasoning == "" || first.Text == "" || first.Call != `{"text":"count these three"}` {
		t.Fatalf("first round = %+v, want reasoning, text and a call of the demo tool", first)
	}
	call := Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1"}}}
	call.ToolCalls[0].Function.Name = ToolName
	result := Message{Role: "tool", ToolCallID: "call_1", Content: "3 words"}
	second := Script(Request{Messages: []Message{user, call, result}, Tools: []string{ToolName}})
	if second.Call != "" || !strings.Contains(second.Text, "*3 words*") {
		t.Fatalf("second round = %+v, want the answer quoting the result", second)
	}
	for _, want := range []string{"\n- ", "```sh\n", "| --- | --- |"} {
		if !strings.Contains(second.Text, want) {
			t.Errorf("answer lacks %q", want)
		}
	}
	if r := Script(Request{Messages: []Message{user}}); r.Call != "" || !strings.Contains(r.Text, "3 words") {
		t.Errorf("without the tool = %+v", r)
	}
}

// TestThroughTheAdapter: the endpoint speaks the wire the real model
// adapter reads, streamed: reasoning deltas, text, one tool call, usage.
func TestThroughTheAdapter(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	m, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: ModelName})
	if err != nil {
		t.Fatal(err)
	}
	req := agent.ChatRequest{
		Messages: []agent.ModelMessage{{Role: "user", Content: []agent.Content{{Type: "text", Body: "count these three"}}}},
		Tools:    []agent.ToolSpec{{Name: ToolName, Parameters: []byte(`{"type":"object"}`)}},
	}
	var reasoning, text strings.Builder
	resp, err := m.Chat(context.Background(), req, func(d agent.Delta) error {
		reasoning.WriteString(d.Reasoning)
		text.WriteString(d.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reasoning.String(), "3 words") || text.String() != "Let me count your words with the demo tool." {
		t.Errorf("reasoning %q, text %q", reasoning.String(), text.String())
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != ToolName || resp.ToolCalls[0].Arguments != `{"text":"count these three"}` {
		t.Errorf("tool calls %+v", resp.ToolCalls)
	}
}
