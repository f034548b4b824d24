package llmtest

import (
	"github.com/agentik/agentik/internal/agent"
	"strings"
	"testing"
)

func TestDemoScript(t *testing.T) {
	user := Message{Role: "user", Content: "count these three"}
	offered := []Tool{{Name: DemoToolName}}

	first := Demo(Request{Messages: []Message{user}, Tools: offered})
	if first.Reasoning == "" || first.Text == "" || len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != DemoToolName ||
		first.ToolCalls[0].Arguments != `{"text":"count these three"}` {
		t.Fatalf("first round = %+v, want reasoning, text and a call of the demo tool", first)
	}

	call := Message{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "call_1", Name: DemoToolName}}}
	result := Message{Role: "tool", ToolCallID: "call_1", Content: "3 words"}
	second := Demo(Request{Messages: []Message{user, call, result}, Tools: offered})
	if len(second.ToolCalls) != 0 || !strings.Contains(second.Text, "*3 words*") {
		t.Fatalf("second round = %+v, want the answer quoting the result", second)
	}
	for _, want := range []string{"\n- ", "```sh\n", "| --- | --- |"} {
		if !strings.Contains(second.Text, want) {
			t.Errorf("answer lacks %q", want)
		}
	}

	// Without the tool offered (an mcp.json cannot hide it, but a client
	// of the fake can), the answer comes at once.
	if r := Demo(Request{Messages: []Message{user}}); len(r.ToolCalls) != 0 || !strings.Contains(r.Text, "3 words") {
		t.Errorf("without the tool = %+v", r)
	}
}
