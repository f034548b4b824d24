package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// Command is one frame a client sends: {"op","id",…}. Which fields matter
// depends on Op; pointers tell "absent" from a zero value.
type Command struct {
	Op string `json:"op"`
	ID string `json:"id"`

	// subscribe
	Stream string `json:"stream,omitempty"`
	After  *int64 `json:"after,omitempty"` // subscribe, get_messages
	Epoch  string `json:"epoch,omitempty"`
	Sub    string `json:"sub,omitempty"` // unsubscribe
	// Mine narrows an admin's subscribe (and list_conversations) to her
	// own conversations: her sidebar.
	Mine   bool    `json:"mine,omitempty"`
	Title  *string `json:"title,omitempty"`
	Temp   bool    `json:"temp,omitempty"`
	Offset *int    `json:"offset,omitempty"`
	Limit  *int    `json:"limit,omitempty"`
	End    *int    `json:"end,omitempty"` // get_messages: the latest messages before this position

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

	// elicit (elicit.go): its content is an object, read by Decode.
	ElicitFields

	AgentFields // create_agent, update_agent, delete_agent (agentdef.go)
	MCPFields   // read_resource, get_prompt (resource.go)

	// Frame is the whole frame of an op of the server's op table (every
	// op but a ConnectionOp), which the table reads itself.
	Frame []byte `json:"-"`
}

// MaxRequestID caps the length of a request id.
const MaxRequestID = 128

// Decode parses a client frame. id is the request id when one could be
// read, even if the rest of the frame is bad, so the error reply is still
// correlated. Every failure is a bad_request *agent.Error. An op other
// than a ConnectionOp is the server's op table's to read: its Command has
// Op, ID and Frame, and its fields are not checked here.
func Decode(b []byte) (cmd Command, id *string, err error) {
	if c, ok := decodeSubscribe(b); ok {
		id := c.ID
		if err := c.Check(); err != nil {
			return Command{}, &id, err
		}
		return c, &id, nil
	}
	return decodeGeneral(b)
}

// decodeGeneral is Decode for every frame decodeSubscribe does not read.
func decodeGeneral(b []byte) (cmd Command, id *string, err error) {
	var head struct {
		ID json.RawMessage `json:"id"`
		Op json.RawMessage `json:"op"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "a command must be a JSON object like {\"op\":\"ping\",\"id\":\"1\"}: %s", JSONProblem(b, err))
	}
	if len(head.ID) == 0 || bytes.Equal(head.ID, []byte("null")) {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "id is required: a string that the reply carries back")
	}
	var s string
	if err := json.Unmarshal(head.ID, &s); err != nil {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "id must be a string, got %s", agent.Shorten(string(head.ID), 40))
	}
	id = &s
	if len(s) > MaxRequestID {
		return Command{}, nil, agent.Errorf(agent.CodeBadRequest, "id is %d bytes long; at most %d are allowed", len(s), MaxRequestID)
	}
	var op string
	if json.Unmarshal(head.Op, &op) == nil && !ConnectionOp(op) {
		return Command{Op: op, ID: s, Frame: b}, id, nil
	}
	if err := json.Unmarshal(b, &cmd); err != nil {
		return Command{}, id, agent.Errorf(agent.CodeBadRequest, "bad command: %s", JSONProblem(b, err))
	}
	if err := cmd.Check(); err != nil {
		return Command{}, id, err
	}
	return cmd, id, nil
}

// Check verifies that a decoded command of a ConnectionOp has the fields
// its op needs.
func (c *Command) Check() error {
	need := func(name, v string) error {
		if v == "" {
			return agent.Errorf(agent.CodeBadRequest, "%s needs %s", c.Op, name)
		}
		return nil
	}
	switch c.Op {
	case OpSubscribe:
		switch c.Stream {
		case "":
			return agent.Errorf(agent.CodeBadRequest, "subscribe needs stream: \"all\", \"agent\", \"conversation\" or \"inbox\"")
		case "all", "agent", StreamInbox:
		case "conversation":
			if err := need("conversation_id", c.ConversationID); err != nil {
				return err
			}
		default:
			return agent.Errorf(agent.CodeBadRequest, "stream must be \"all\", \"agent\", \"conversation\" or \"inbox\", got %q", agent.Shorten(c.Stream, 40))
		}
		if c.After != nil && *c.After < 0 {
			return agent.Errorf(agent.CodeBadRequest, "after must be 0 or more, got %d", *c.After)
		}
		return nil
	case OpUnsubscribe:
		return need("sub", c.Sub)
	case OpPing:
		return nil
	case "":
		return agent.Errorf(agent.CodeBadRequest, "op is required, e.g. {\"op\":\"ping\",\"id\":\"1\"}")
	}
	return agent.Errorf(agent.CodeBadRequest, "%s is not an op of the connection; the server's op table answers it", agent.Shorten(c.Op, 40))
}
