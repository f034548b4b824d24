package agent

import (
	"context"
	"encoding/json"
	"regexp"
)

// The OpenAI-compatible facade (server/openai.go) speaks in whole
// histories: each request carries every message so far, and its last entry
// (a user message, or the results of tool calls the client ran) is new.
// This file turns such a request into the runner's terms: a temp
// conversation seeded with the history (stateless requests), and a turn
// started from the new input, which may offer the client's own tools to
// the model.

// MaxClientTools is how many client-side tools one request may offer.
const MaxClientTools = 128

// toolName is what a client-side tool may be called (OpenAI's rule).
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// turnInput is what starts a turn: a user message, or the results of
// client-side tool calls; and the client-side tools offered during it.
type turnInput struct {
	content     []Content
	clientID    string
	results     []ToolResult
	clientTools []ToolSpec
	// start, when set, are the records that start the turn instead of a
	// user message (a regenerate, branch.go); messageID is what the send
	// answers then.
	start     []*Record
	messageID string
}

// ToolResult is the result of a tool call the client ran.
type ToolResult struct {
	CallID string
	Name   string // may be empty: the call's name is then not repeated
	Result string
}

// CompletionInput is the new input of a completion request.
type CompletionInput struct {
	// Content is the new user message; or, when empty, Results are the
	// results of the client-side tool calls the previous turn ended with.
	Content []Content
	Results []ToolResult
	// ClientTools are offered to the model besides the server's tools (a
	// client tool hides a server tool of the same name). The model's call
	// to one ends the turn after its round: its tool_call message is kept
	// and the client runs it, sending the result with its next request.
	ClientTools []ToolSpec
}

// SendCompletion starts a turn in conversation id from a completion
// request's new input. Like Send, the turn then runs whoever listens; a
// caller that wants it to stop when its client leaves interrupts it.
func (r *Runner) SendCompletion(ctx context.Context, id string, in CompletionInput) (SendResult, error) {
	if err := r.access(ctx, id); err != nil {
		return SendResult{}, err
	}
	if err := CheckClientTools(in.ClientTools); err != nil {
		return SendResult{}, err
	}
	if len(in.Content) == 0 {
		if len(in.Results) == 0 {
			return SendResult{}, Errorf(CodeBadRequest, "a completion needs a user message or tool results as its last input")
		}
		for i, res := range in.Results {
			if res.CallID == "" {
				return SendResult{}, Errorf(CodeBadRequest, "tool result %d has no tool_call_id", i)
			}
		}
		return r.send(ctx, id, turnInput{results: in.Results, clientTools: in.ClientTools})
	}
	if err := CheckContent(in.Content); err != nil {
		return SendResult{}, err
	}
	return r.send(ctx, id, turnInput{content: in.Content, clientTools: in.ClientTools})
}

// CheckClientTools checks the tools a client offers: valid, unique names
// and JSON object schemas.
func CheckClientTools(specs []ToolSpec) error {
	if len(specs) > MaxClientTools {
		return Errorf(CodeBadRequest, "tools has %d entries; at most %d are allowed", len(specs), MaxClientTools)
	}
	seen := map[string]bool{}
	for i, s := range specs {
		if !toolName.MatchString(s.Name) {
			return Errorf(CodeBadRequest, "tools[%d].function.name must be 1 to 64 letters, digits, _ or -, got %q", i, s.Name)
		}
		if seen[s.Name] {
			return Errorf(CodeBadRequest, "tools[%d].function.name %q is used twice", i, s.Name)
		}
		seen[s.Name] = true
		if len(s.Parameters) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(s.Parameters, &obj); err != nil {
				return Errorf(CodeBadRequest, "tools[%d].function.parameters must be a JSON Schema object", i)
			}
		}
	}
	return nil
}

// CreateCompletion makes a temp conversation whose history is a stateless
// request's messages but its new input (see CreateSeeded).
func (r *Runner) CreateCompletion(ctx context.Context, history []ModelMessage) (Conversation, error) {
	return r.CreateSeeded(ctx, history, true, Settings{})
}

// checkHistory checks the entries of a stateless request's history.
func checkHistory(history []ModelMessage) error {
	for i, m := range history {
		switch m.Role {
		case RoleSystem:
		case RoleUser:
			if err := CheckContent(m.Content); err != nil {
				return Errorf(CodeBadRequest, "messages[%d]: %s", i, err.(*Error).Message)
			}
		case RoleAssistant:
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return Errorf(CodeBadRequest, "messages[%d].tool_calls[%d] needs an id and a function name", i, j)
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return Errorf(CodeBadRequest, "messages[%d].tool_call_id is required for a tool message", i)
			}
		default:
			return Errorf(CodeBadRequest, "messages[%d].role must be system, user, assistant or tool, got %q", i, m.Role)
		}
	}
	return nil
}

// resultRecords persist the results of client-side tool calls: the input
// of a turn that goes on after the client ran them.
func (r *Runner) resultRecords(convID string, results []ToolResult) []*Record {
	recs := make([]*Record, 0, len(results))
	for _, res := range results {
		m := Message{Type: MessageToolResult, ConversationID: convID, CallID: res.CallID, Name: res.Name, Result: res.Result}
		recs = append(recs, r.messageRecord(m, m.memory()))
	}
	return recs
}

// withClientTools adds the client's tools to the server's; a client tool
// hides a server tool of the same name.
func withClientTools(specs, client []ToolSpec) []ToolSpec {
	if len(client) == 0 {
		return specs
	}
	out := make([]ToolSpec, 0, len(specs)+len(client))
	for _, s := range specs {
		if !hasTool(client, s.Name) {
			out = append(out, s)
		}
	}
	return append(out, client...)
}

func hasTool(specs []ToolSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// isClientTool reports whether name is one of the turn's client-side tools.
func (t *turn) isClientTool(name string) bool { return hasTool(t.clientTools, name) }
