package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

func TestToolChoice(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		want  *agent.ToolChoice
		param string // of the refusal; "" when accepted
	}{
		{``, nil, ""},
		{`null`, nil, ""},
		{`"auto"`, nil, ""},
		{`"none"`, &agent.ToolChoice{Mode: "none"}, ""},
		{`"required"`, &agent.ToolChoice{Mode: "required"}, ""},
		{`{"type":"function","function":{"name":"f"}}`, &agent.ToolChoice{Mode: "function", Name: "f"}, ""},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}]}}`,
			&agent.ToolChoice{Mode: "auto", Allowed: []string{"f", "g"}}, ""},
		{`"sometimes"`, nil, "tool_choice"},
		{`{"type":"function","function":{}}`, nil, "tool_choice.function.name"},
		{`{"type":"custom","custom":{"name":"f"}}`, nil, "tool_choice.type"},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"none","tools":[]}}`, nil, "tool_choice.allowed_tools.mode"},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`, nil, "tool_choice.allowed_tools.tools"},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom"}]}}`, nil, "tool_choice.allowed_tools.tools[0]"},
		{`7`, nil, "tool_choice"},
	} {
		got, err := toolChoice(json.RawMessage(tc.raw))
		var pe *paramError
		if errors.As(err, &pe) != (tc.param != "") || (pe != nil && pe.param != tc.param) {
			t.Errorf("%s: error %v, want one naming %q", tc.raw, err, tc.param)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

func TestResponseFormat(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		want  *agent.ResponseFormat
		param string
	}{
		{`{"type":"text"}`, nil, ""},
		{`{"type":"json_object"}`, &agent.ResponseFormat{Type: "json_object"}, ""},
		{`{"type":"json_schema","json_schema":{"name":"w","description":"d","schema":{"type":"object"},"strict":true}}`,
			&agent.ResponseFormat{Type: "json_schema", Name: "w", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}, ""},
		{`{"type":"json_schema","json_schema":{"name":"w"}}`, &agent.ResponseFormat{Type: "json_schema", Name: "w"}, ""},
		{`{"type":"json_schema"}`, nil, "response_format.json_schema"},
		{`{"type":"json_schema","json_schema":{"name":"a b"}}`, nil, "response_format.json_schema.name"},
		{`{"type":"json_schema","json_schema":{"name":"w","schema":[1]}}`, nil, "response_format.json_schema.schema"},
		{`{"type":"xml"}`, nil, "response_format.type"},
	} {
		var f chatFormat
		if err := json.Unmarshal([]byte(tc.raw), &f); err != nil {
			t.Fatal(err)
		}
		got, err := f.format()
		var pe *paramError
		if errors.As(err, &pe) != (tc.param != "") || (pe != nil && pe.param != tc.param) {
			t.Errorf("%s: error %v, want one naming %q", tc.raw, err, tc.param)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

// TestRelayReasoning: reasoning goes out under both names, streamed and
// whole, and the relay notes when the model began to answer.
func TestRelayReasoning(t *testing.T) {
	c := &chatRelay{id: "chatcmpl-1", model: "fake"}
	if _, ok := c.on(&agent.Event{Type: agent.EventMessage}); ok || c.answered {
		t.Fatal("a stored message is not the model answering")
	}
	c.on(&agent.Event{Type: agent.EventStartReasoning})
	if !c.answered {
		t.Fatal("reasoning began: the model answers")
	}
	d, ok := c.on(&agent.Event{Type: agent.EventAppendText, Text: "hmm"})
	if !ok || d.ReasoningContent != "hmm" || d.Reasoning != "hmm" || d.Content != nil {
		t.Fatalf("delta %+v", d)
	}
	c.on(&agent.Event{Type: agent.EventStartResponse})
	c.on(&agent.Event{Type: agent.EventAppendText, Text: "yes"})
	m := c.completion().Choices[0].Message
	if m.ReasoningContent != "hmm" || m.Reasoning != "hmm" || string(m.Content) != `"yes"` {
		t.Fatalf("message %+v", m)
	}
}
