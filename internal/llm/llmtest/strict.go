package llmtest

import (
	"fmt"
	"net/http"
	"strings"
)

// WithStrictToolPairs makes the server refuse, as OpenAI's API does, a
// request whose history breaks the pairing of tool calls and results: an
// assistant message with tool_calls not followed by a tool message for
// each of its ids, or a tool message that answers no preceding call. A
// test then sees the 400 a real endpoint would give.
func WithStrictToolPairs() Option { return func(s *Server) { s.strict = true } }

// unpaired describes what breaks req's tool pairing, or "".
func unpaired(req Request) string {
	ms := req.Messages
	for i := 0; i < len(ms); i++ {
		m := ms[i]
		if m.Role == "tool" {
			return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[%d])", i)
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		j := i + 1
		for ; j < len(ms) && ms[j].Role == "tool"; j++ {
			answered[ms[j].ToolCallID] = true
		}
		var missing []string
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				missing = append(missing, c.ID)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(missing, ", "))
		}
		for k := i + 1; k < j; k++ {
			if !hasCall(m, ms[k].ToolCallID) {
				return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[%d])", k)
			}
		}
		i = j - 1
	}
	return ""
}

func hasCall(m Message, id string) bool {
	for _, c := range m.ToolCalls {
		if c.ID == id {
			return true
		}
	}
	return false
}

// refuseUnpaired answers 400 to a request unpaired refuses, when strict.
func (s *Server) refuseUnpaired(w http.ResponseWriter, req Request) bool {
	if !s.strict {
		return false
	}
	msg := unpaired(req)
	if msg == "" {
		return false
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": "messages", "code": nil,
	}})
	return true
}
