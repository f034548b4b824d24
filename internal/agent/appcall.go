package agent

import (
	"context"
	"encoding/json"
	"strings"
)

// MCP Apps (DESIGN.md §12.4): an app a tool card shows (a ui:// resource
// in a sandboxed iframe) may call tools of its own server. Such a call is
// a turn of its own in the conversation, without a model: its tool_call
// (and the approval_request when the tool needs one, under the same rules
// as a model's call) then its tool_result, stored and shown like a model's
// call, and in working memory, so the model reads later what the app did.
// The turn ends after the call: the model is not asked to answer it. The
// call's id starts with AppCallPrefix, which is how a resumed round (after
// its approval) knows it is an app's and ends there too.

// AppCallPrefix starts the call id of a tool call an MCP App made.
const AppCallPrefix = "app_"

// isAppCall reports whether the call of id was an MCP App's, not the
// model's.
func isAppCall(id string) bool { return strings.HasPrefix(id, AppCallPrefix) }

// AppCallInput is a tool call an MCP App asks for: the tool (its name as
// the model sees it) and its arguments (a JSON object). Whether the app
// may call it (a tool of the app's own server) is the caller's check.
type AppCallInput struct {
	Name      string
	Arguments json.RawMessage
}

// AppCallResult names the call an AppCall started: its result comes as
// the tool_result of CallID in the conversation.
type AppCallResult struct {
	CallID    string `json:"call_id"`
	MessageID string `json:"message_id"`
	Seq       int64  `json:"seq"`
}

// maxAppArguments caps the arguments of an app's tool call.
const maxAppArguments = 64 << 10

// AppCall starts the turn of an app's tool call in conversation id (the
// caller needs edit access, as for a send): busy while a turn runs.
func (r *Runner) AppCall(ctx context.Context, id string, in AppCallInput) (AppCallResult, error) {
	if err := r.access(ctx, id); err != nil {
		return AppCallResult{}, err
	}
	if in.Name == "" {
		return AppCallResult{}, Errorf(CodeBadRequest, "an app's tool call needs name")
	}
	args := "{}"
	if len(in.Arguments) > 0 && string(in.Arguments) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(in.Arguments, &obj); err != nil || obj == nil {
			return AppCallResult{}, Errorf(CodeBadRequest, "arguments must be a JSON object (the tool's arguments)")
		}
		if len(in.Arguments) > maxAppArguments {
			return AppCallResult{}, Errorf(CodeBadRequest, "arguments are %d bytes long; at most %d are allowed", len(in.Arguments), maxAppArguments)
		}
		args = string(in.Arguments)
	}
	call := ToolCall{ID: AppCallPrefix + NewID(), Name: in.Name, Arguments: args}
	rec := r.messageRecord(Message{Type: MessageToolCall, ConversationID: id, CallID: call.ID, Name: call.Name, Arguments: call.Arguments},
		ModelMessage{Role: RoleAssistant, ToolCalls: []ToolCall{call}})
	res, err := r.send(ctx, id, turnInput{start: []*Record{rec}, app: []ToolCall{call}, messageID: rec.Event.Event.Message.ID})
	if err != nil {
		return AppCallResult{}, err
	}
	r.log.Info("app_tool_call", "conversation_id", id, "call_id", call.ID, "tool", call.Name)
	return AppCallResult{CallID: call.ID, MessageID: res.MessageID, Seq: res.Seq}, nil
}

// appRound runs the app's call of an app turn: it waits for approval as
// a model's call would, or runs at once; the turn then ends.
func (t *turn) appRound(mem []ModelMessage) error {
	t.mem = &mem // its tool_call message started the turn: no live tool_call besides
	if t.mustWait(t.app) {
		return t.park(t.app)
	}
	for i, c := range t.app {
		res := t.callTool(c, t.app[i:])
		if t.parked {
			return errParked
		}
		if err := t.liveResult(res); err != nil {
			return err
		}
		rec := t.r.messageRecord(res, res.memory())
		if t.roundStored {
			rec.Resolve = c.ID
		}
		if err := t.emit(rec); err != nil {
			return err
		}
		mem = append(mem, res.memory())
	}
	return nil
}

// appRoundOf reports whether a stored round is an app's call.
func appRoundOf(pend []PendingCall) bool {
	for _, p := range pend {
		if !isAppCall(p.CallID) {
			return false
		}
	}
	return len(pend) > 0
}
