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
	knowledge   []string // bases the request attaches (knowledge.go)
	// format and choice shape the turn's model calls (completion.go).
	format *ResponseFormat
	choice *ToolChoice
	// start, when set, are the records that start the turn instead of a
	// user message (a regenerate, branch.go); messageID is what the send
	// answers then.
	start     []*Record
	messageID string
	// memory is content as the model reads it, when it differs (attached
	// resources read, resource.go).
	memory []Content
	// app is the tool call of an MCP App that starts the turn instead of
	// a model round (appcall.go).
	app []ToolCall
	// create, when set, is the conversation the turn's first records
	// make (start.go).
	create *created
}

// ToolResult is the result of a tool call the client ran.
type ToolResult struct {
	CallID string
	Name   string // may be empty: the call's name is then not repeated
	Result string
}

// checkChoice checks that the tools a choice names exist: the request's
// or the server's.
func (r *Runner) checkChoice(ctx context.Context, c *ToolChoice, client []ToolSpec) error {
	if c == nil || (c.Name == "" && len(c.Allowed) == 0) {
		return nil
	}
	var specs []ToolSpec
	if r.cfg.Tools != nil {
		specs = r.cfg.Tools.Specs(ctx)
	}
	specs = withClientTools(specs, client)
	for _, n := range append([]string{c.Name}, c.Allowed...) {
		if n != "" && !hasTool(specs, n) {
			return Errorf(CodeBadRequest, "tool_choice names the tool %q, which is neither among the request's tools nor the server's", n)
		}
	}
	return nil
}

// answersCalls checks that each result answers a call of mem still
// waiting for its result: a result that answers no call would make the
// history one that strict models refuse for every later turn.
func answersCalls(mem []ModelMessage, results []ToolResult) error {
	open := map[string]bool{}
	for _, m := range mem {
		switch m.Role {
		case RoleAssistant:
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case RoleTool:
			delete(open, m.ToolCallID)
		}
	}
	for i, res := range results {
		if !open[res.CallID] {
			return Errorf(CodeBadRequest, "tool result %d: tool_call_id %q answers no tool call that waits for a result (each tool message must follow the assistant message whose tool_calls it answers, once)", i, Shorten(res.CallID, 64))
		}
		delete(open, res.CallID)
	}
	return nil
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

// MaxRequestMessages caps the messages of one request's history (a
// stateless /v1 request's messages, a Responses input, Conversations
// items), as MaxImportMessages caps an import's: every message becomes a
// message with its event, so the count, not only the body's bytes,
// bounds what a request costs (500,000 one-word messages fit in 16 MiB).
const MaxRequestMessages = MaxImportMessages

// checkHistory checks the entries of a stateless request's history: at
// most MaxRequestMessages, and each tool message answers a call of an
// earlier assistant message, once.
func checkHistory(history []ModelMessage) error {
	if len(history) > MaxRequestMessages {
		return Errorf(CodeTooLarge, "a request holds at most %d messages, got %d", MaxRequestMessages, len(history))
	}
	open := map[string]bool{} // calls waiting for their result
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
				open[tc.ID] = true
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return Errorf(CodeBadRequest, "messages[%d].tool_call_id is required for a tool message", i)
			}
			if !open[m.ToolCallID] {
				return Errorf(CodeBadRequest, "messages[%d].tool_call_id %q answers no tool call of an earlier assistant message (or one already answered)", i, Shorten(m.ToolCallID, 64))
			}
			delete(open, m.ToolCallID)
		default:
			return Errorf(CodeBadRequest, "messages[%d].role must be system, user, assistant or tool, got %q", i, m.Role)
		}
	}
	return nil
}

// resultRecords persist the results of client-side tool calls: the input
// of a turn that goes on after the client ran them. The first carries the
// request's clientID, so a retry of the same results finds them.
func (r *Runner) resultRecords(convID, clientID string, results []ToolResult) []*Record {
	recs := make([]*Record, 0, len(results))
	for i, res := range results {
		m := Message{Type: MessageToolResult, ConversationID: convID, CallID: res.CallID, Name: res.Name, Result: res.Result}
		if i == 0 {
			m.ClientID = clientID
		}
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
