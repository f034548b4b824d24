package store

import (
	"encoding/json"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// The event log is read far more than it is written: a resuming client
// replays it. agent.AllEvent's UnmarshalJSON decodes in layers (envelope,
// then inner event, each validated again), which costs about 2.4 times a
// single pass. decodeEvent decodes a stored payload of a known kind and type
// in one pass and hands everything else (unknown kinds or types, anything
// odd) to agent's decoder, so the result is always what json.Unmarshal into
// agent.AllEvent gives. TestDecodeEventMatchesAgent holds it to that, and
// fails when agent's event types gain a field this file does not know.

// storedEvent is the JSON of an AllEvent with its inner event flattened.
type storedEvent struct {
	Type           string       `json:"type"`
	Seq            int64        `json:"seq"`
	ID             string       `json:"id"`
	Date           string       `json:"date"`
	ConversationID string       `json:"conversation_id"`
	Event          *storedInner `json:"event"`
}

// storedInner holds the fields of every known AgentEvent and Event.
type storedInner struct {
	Type           string            `json:"type"`
	ConversationID string            `json:"conversation_id"` // agent
	Title          string            `json:"title"`           // agent
	Model          *string           `json:"model"`           // agent (updated)
	SystemPrompt   *string           `json:"system_prompt"`   // agent (updated)
	Params         *agent.Params     `json:"params"`          // agent (updated)
	Head           string            `json:"head"`            // agent (updated)
	Server         *agent.ToolServer `json:"server"`          // agent (tool_server, live only: decoded by agent)
	Message        json.RawMessage   `json:"message"`         // message: a Message; error: the text
	Text           string            `json:"text"`
	Mime           string            `json:"mime"`
	Data           string            `json:"data"`
	CallID         string            `json:"call_id"`
	Name           string            `json:"name"`
	Arguments      string            `json:"arguments"`
	Result         string            `json:"result"`
	IsError        bool              `json:"is_error"`
	Code           string            `json:"code"`
	Usage          *agent.Usage      `json:"usage"`
	MessageID      string            `json:"message_id"`
	Content        []agent.Content   `json:"content"`
	Position       int               `json:"position"`
	Decision       string            `json:"decision"`
	Reason         string            `json:"reason"`
}

// decodeEvent decodes one stored payload into ev.
func decodeEvent(b []byte, ev *agent.AllEvent) error {
	if fastDecode(b, ev) {
		return nil
	}
	*ev = agent.AllEvent{}
	return json.Unmarshal(b, ev)
}

// fastDecode decodes b in one pass if it is a known kind and type; false
// means: use agent's decoder.
func fastDecode(b []byte, ev *agent.AllEvent) bool {
	var w storedEvent
	if json.Unmarshal(b, &w) != nil || w.Event == nil {
		return false
	}
	var date time.Time
	if w.Date != "" {
		t, err := time.Parse(time.RFC3339Nano, w.Date)
		if err != nil {
			return false
		}
		date = t.UTC()
	}
	in := w.Event
	*ev = agent.AllEvent{Kind: w.Type, Seq: w.Seq, ID: w.ID, Date: date, ConversationID: w.ConversationID}
	switch w.Type {
	case agent.KindAgent:
		switch in.Type {
		case agent.AgentCreated, agent.AgentDeleted, agent.AgentRenamed, agent.AgentUpdated:
		default:
			return false
		}
		ev.Agent = &agent.AgentEvent{Type: in.Type, ConversationID: in.ConversationID, Title: in.Title, Server: in.Server,
			Model: in.Model, SystemPrompt: in.SystemPrompt, Params: in.Params, Head: in.Head}
		ev.ConversationID = in.ConversationID
		return true
	case agent.KindConversation:
		e := &agent.Event{
			Type: in.Type, Text: in.Text, Mime: in.Mime, Data: in.Data,
			CallID: in.CallID, Name: in.Name, Arguments: in.Arguments, Result: in.Result, IsError: in.IsError,
			Code: in.Code, Usage: in.Usage, MessageID: in.MessageID, Content: in.Content, Position: in.Position,
			Decision: in.Decision, Reason: in.Reason,
		}
		switch in.Type {
		case agent.EventMessage:
			e.Message = new(agent.Message)
			if json.Unmarshal(in.Message, e.Message) != nil {
				return false
			}
		case agent.EventError:
			if json.Unmarshal(in.Message, &e.Error) != nil {
				return false
			}
		case agent.EventStartReasoning, agent.EventStartResponse, agent.EventAppendText, agent.EventAppendImage,
			agent.EventToolCall, agent.EventToolResult, agent.EventInterrupted, agent.EventEnd,
			agent.EventQueued, agent.EventQueueCancelled, agent.EventApprovalRequest, agent.EventApproval:
		default:
			return false
		}
		ev.Event = e
		return true
	}
	return false
}
