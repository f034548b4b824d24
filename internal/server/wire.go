package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// WebSocket ops: the op of every command a client sends (DESIGN.md §5).
const (
	OpSubscribe          = "subscribe"
	OpUnsubscribe        = "unsubscribe"
	OpCreateConversation = "create_conversation"
	OpListConversations  = "list_conversations"
	OpGetConversation    = "get_conversation"
	OpGetMessages        = "get_messages"
	OpSend               = "send"
	OpInterrupt          = "interrupt"
	OpRename             = "rename"
	OpDelete             = "delete"
	OpPing               = "ping"
	OpListTools          = "list_tools" // extension: the state of the tool servers
	OpSearch             = "search"
	OpCompact            = "compact" // summarize a conversation's earlier turns now (DESIGN §10.1)
	// Models and per-conversation settings (model.go).
	OpListModels         = "list_models"
	OpUpdateConversation = "update_conversation"
	OpCancelQueued       = "cancel_queued"
	OpApprove            = "approve"
	OpRegenerate         = "regenerate"    // answer again from an answer's user message (branch.go)
	OpEdit               = "edit"          // send an edited copy of a user message (branch.go)
	OpSwitchBranch       = "switch_branch" // move a conversation's head (branch.go)
)

// Frame types the server sends.
const (
	FrameReply    = "reply"
	FrameEvent    = "event"
	FrameCaughtUp = "caught_up"
	FrameResync   = "resync"
)

// Command is one frame a client sends: {"op","id",…}. Which fields matter
// depends on Op; pointers tell "absent" from a zero value.
type Command struct {
	Op string `json:"op"`
	ID string `json:"id"`

	// subscribe
	Stream string  `json:"stream,omitempty"`
	After  *int64  `json:"after,omitempty"` // subscribe, get_messages
	Epoch  string  `json:"epoch,omitempty"`
	Sub    string  `json:"sub,omitempty"` // unsubscribe
	Title  *string `json:"title,omitempty"`
	Temp   bool    `json:"temp,omitempty"`
	Offset *int    `json:"offset,omitempty"`
	Limit  *int    `json:"limit,omitempty"`

	ConversationID string          `json:"conversation_id,omitempty"`
	Content        []agent.Content `json:"content,omitempty"`
	ClientID       string          `json:"client_id,omitempty"`

	Query          string `json:"q,omitempty"` // search
	SettingsFields        // create_conversation, update_conversation
	OnBusy         string `json:"on_busy,omitempty"`    // send: reject, queue or interrupt
	MessageID      string `json:"message_id,omitempty"` // cancel_queued, regenerate, edit, switch_branch

	// approve
	CallID    string          `json:"call_id,omitempty"`
	Decision  string          `json:"decision,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Branch    string          `json:"branch,omitempty"` // get_messages: "all" for every branch
}

// Frame is any frame the server sends, decoded: a reply, an event, a
// caught_up or a resync. Clients decode every frame into it and switch on
// Type.
type Frame struct {
	Type string `json:"type"`

	// reply
	ID     *string         `json:"id,omitempty"` // nil: the command could not be parsed
	OK     bool            `json:"ok,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *agent.Error    `json:"error,omitempty"`

	// event, caught_up, resync
	Sub    string          `json:"sub,omitempty"`
	Event  json.RawMessage `json:"event,omitempty"` // an AllEvent
	Seq    int64           `json:"seq,omitempty"`   // caught_up
	After  int64           `json:"after,omitempty"` // resync
	Start  *int64          `json:"start,omitempty"` // resync pruned: the retained log starts after it
	Reason string          `json:"reason,omitempty"`
}

// SubscribeResult is the result of subscribe. Head is the highest seq
// stored when the subscription started.
type SubscribeResult struct {
	Sub   string `json:"sub"`
	Epoch string `json:"epoch"`
	Head  int64  `json:"head"`
}

// SendResult is the result of send. Seq is the seq of the user's message
// event (0 for a temp conversation): subscribing with after = seq-1 shows
// the whole turn. Duplicate says the client_id was used before and nothing
// was started.
type SendResult struct {
	MessageID string `json:"message_id"`
	Seq       int64  `json:"seq,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Queued    bool   `json:"queued,omitempty"`   // it waits for the turns before it
	Position  int    `json:"position,omitempty"` // of a queued send: 1 = runs next
}

// InterruptResult is the result of interrupt.
type InterruptResult struct {
	Interrupted bool `json:"interrupted"`
}

// Empty is the result of commands that return nothing.
type Empty struct{}

// ResyncReasonError is the resync reason when a subscription's replay
// failed on the server's side; resubscribing with after may succeed later.
const ResyncReasonError = "error"

// decodeCommand parses a client frame. id is the request id when one could
// be read, even if the rest of the frame is bad, so the error reply is
// still correlated. Every failure is a bad_request *agent.Error.
func decodeCommand(b []byte) (cmd Command, id *string, err error) {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "a command must be a JSON object like {\"op\":\"ping\",\"id\":\"1\"}: %s", jsonProblem(err))
	}
	if len(head.ID) == 0 || bytes.Equal(head.ID, []byte("null")) {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "id is required: a string that the reply carries back")
	}
	var s string
	if err := json.Unmarshal(head.ID, &s); err != nil {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "id must be a string, got %s", truncate(string(head.ID), 40))
	}
	id = &s
	if len(s) > maxRequestID {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "id is %d bytes long; at most %d are allowed", len(s), maxRequestID)
	}
	if err := json.Unmarshal(b, &cmd); err != nil {
		return Command{}, id, agent.Errorf(agent.CodeBadRequest, "bad command: %s", jsonProblem(err))
	}
	if err := cmd.check(); err != nil {
		return Command{}, id, err
	}
	return cmd, id, nil
}

// maxRequestID caps the length of a request id.
const maxRequestID = 128

// check verifies that a decoded command has the fields its op needs.
func (c *Command) check() error {
	need := func(name, v string) error {
		if v == "" {
			return agent.Errorf(agent.CodeBadRequest, "%s needs %s", c.Op, name)
		}
		return nil
	}
	nonNeg := func(name string, v *int64) error {
		if v != nil && *v < 0 {
			return agent.Errorf(agent.CodeBadRequest, "%s must be 0 or more, got %d", name, *v)
		}
		return nil
	}
	switch c.Op {
	case OpSubscribe:
		switch c.Stream {
		case "":
			return agent.Errorf(agent.CodeBadRequest, "subscribe needs stream: \"all\", \"agent\" or \"conversation\"")
		case "all", "agent":
		case "conversation":
			if err := need("conversation_id", c.ConversationID); err != nil {
				return err
			}
		default:
			return agent.Errorf(agent.CodeBadRequest, "stream must be \"all\", \"agent\" or \"conversation\", got %q", truncate(c.Stream, 40))
		}
		return nonNeg("after", c.After)
	case OpUnsubscribe:
		return need("sub", c.Sub)
	case OpCreateConversation, OpListConversations, OpPing, OpListTools, OpSearch, OpListModels:
		return nil
	case OpUpdateConversation:
		return need("conversation_id", c.ConversationID)
	case OpGetConversation, OpInterrupt, OpDelete, OpCompact:
		return need("conversation_id", c.ConversationID)
	case OpGetMessages:
		if err := need("conversation_id", c.ConversationID); err != nil {
			return err
		}
		return nonNeg("after", c.After)
	case OpSend:
		if err := need("conversation_id", c.ConversationID); err != nil {
			return err
		}
		if len(c.Content) == 0 {
			return agent.Errorf(agent.CodeBadRequest, "send needs content, e.g. [{\"type\":\"text\",\"body\":\"hello\"}]")
		}
		return nil
	case OpCancelQueued:
		if err := need("conversation_id", c.ConversationID); err != nil {
			return err
		}
		return need("message_id", c.MessageID)
	case OpApprove:
		if err := need("conversation_id", c.ConversationID); err != nil {
			return err
		}
		if err := need("call_id", c.CallID); err != nil {
			return err
		}
		return need("decision", c.Decision)
	case OpRename:
		if err := need("conversation_id", c.ConversationID); err != nil {
			return err
		}
		if c.Title == nil {
			return agent.Errorf(agent.CodeBadRequest, "rename needs title")
		}
		return nil
	case OpRegenerate, OpEdit, OpSwitchBranch:
		return checkBranchCommand(*c)
	case "":
		return agent.Errorf(agent.CodeBadRequest, "op is required, e.g. {\"op\":\"ping\",\"id\":\"1\"}")
	}
	return agent.Errorf(agent.CodeBadRequest, "unknown op %q; see docs/PROTOCOL.md for the list", truncate(c.Op, 40))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// replyFrame encodes a reply. A nil id encodes as null.
func replyFrame(id *string, result any, e *agent.Error) ([]byte, error) {
	f := struct {
		Type   string       `json:"type"`
		ID     *string      `json:"id"`
		OK     bool         `json:"ok"`
		Result any          `json:"result,omitempty"`
		Error  *agent.Error `json:"error,omitempty"`
	}{FrameReply, id, e == nil, result, e}
	if e == nil && result == nil {
		f.Result = Empty{}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode reply: %w", err)
	}
	return b, nil
}

// eventFrame encodes an event frame around an already encoded AllEvent.
// Sub ids are made by the server and never need escaping.
func eventFrame(sub string, ev []byte) []byte {
	b := make([]byte, 0, len(ev)+len(sub)+32)
	b = append(b, `{"type":"event","sub":"`...)
	b = append(b, sub...)
	b = append(b, `","event":`...)
	b = append(b, ev...)
	return append(b, '}')
}

func caughtUpFrame(sub string, seq int64) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"type":"caught_up","sub":"`...)
	b = append(b, sub...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	return append(b, '}')
}

func resyncFrame(sub string, after int64, reason string, start int64) []byte {
	b, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Sub    string `json:"sub"`
		After  int64  `json:"after"`
		Reason string `json:"reason"`
		Start  *int64 `json:"start,omitempty"`
	}{FrameResync, sub, after, reason, startField(reason, start)})
	return b
}

// startField is the resync's start: only a pruned resync has one.
func startField(reason string, start int64) *int64 {
	if reason != broker.ReasonPruned {
		return nil
	}
	return &start
}
