package agent

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event types: the live progress of a turn.
const (
	EventMessage        = "message"
	EventStartReasoning = "start_reasoning"
	EventStartResponse  = "start_response"
	EventAppendText     = "append_text"
	EventAppendImage    = "append_image"
	EventToolCall       = "tool_call"
	EventToolResult     = "tool_result"
	EventError          = "error"
	EventInterrupted    = "interrupted"
	EventEnd            = "end"
	// EventQueued and EventQueueCancelled report a send waiting for the
	// turns before it (see queue.go).
	EventQueued         = "queued"
	EventQueueCancelled = "queue_cancelled"
	// EventApprovalRequest and EventApproval: a tool call waiting for a
	// person's decision, and the decision (see approval.go).
	EventApprovalRequest = "approval_request"
	EventApproval        = "approval"
	// EventDelegation: a tool call agent__<slug> started the other agent's
	// turn in a child conversation (delegate.go).
	EventDelegation = "delegation"
	// EventMemoryUpdated: a memory tool call of the turn changed a memory
	// block (memory.go); its tool_result follows.
	EventMemoryUpdated = "memory_updated"
	// EventContinued: the turn's process died and this one continues the
	// turn from its last stored step (recovery.go); Attempt counts the
	// continuations of the turn. The events after it are more of the same
	// turn: text continues the answer the events before it began.
	EventContinued = "continued"
)

// Event is one step of a conversation: a persisted message or live progress
// of a turn. Every turn ends with exactly one EventEnd. The JSON carries
// exactly the type's fields, as each field's wire tag says (see codec.go).
type Event struct {
	// Type is the event's type; the tag lists the types without fields.
	Type string `wire:"type,*,start_reasoning,start_response,interrupted"`

	Message *Message `wire:"message,message"`

	Text string `wire:"text,append_text"`
	Mime string `wire:"mime,append_image"`
	Data string `wire:"data,append_image"`

	CallID    string `wire:"call_id,tool_call,tool_result,approval_request,approval,delegation,tool_progress,elicitation_request?,memory_updated"`
	Name      string `wire:"name,tool_call,tool_result,approval_request,delegation,tool_progress"`
	Arguments string `wire:"arguments,tool_call,approval_request,approval?"`
	Result    string `wire:"result,tool_result"`
	IsError   bool   `wire:"is_error,tool_result?"`
	// ChildID: the child conversation a delegation runs in (delegate.go);
	// a client subscribes to it to show the other agent's work live.
	ChildID string `wire:"child_conversation_id,delegation,tool_result?"`
	Agent   string `wire:"agent,delegation"`
	// Memory: the change of a memory_updated event, and on the tool_result
	// of the call that made it.
	Memory *MemoryChange `wire:"memory,memory_updated,tool_result?"`

	Error string `wire:"message,error"` // the error's message
	Code  string `wire:"code,error?"`

	Usage *Usage `wire:"usage,end?"`

	MessageID string    `wire:"message_id,queued,queue_cancelled"`
	Content   []Content `wire:"content,queued"`
	Position  int       `wire:"position,queued"` // 1 = runs next, when it was queued

	Decision string `wire:"decision,approval"` // approve or deny
	Reason   string `wire:"reason,approval?"`

	// Images that came with a tool's result (toolcall.go).
	Images []Content `wire:"images,tool_result?"`
	// Resources a tool's result linked or embedded (toolcall.go).
	Resources []Content `wire:"resources,tool_result?"`
	// Progress of a running tool call (toolcall.go).
	Progress *ToolProgress `wire:"progress,tool_progress"`
	// An elicitation (elicit.go): the request and its answer.
	RequestID string          `wire:"request_id,elicitation_request,elicitation"`
	Server    string          `wire:"server,elicitation_request"`
	Mode      string          `wire:"mode,elicitation_request"`
	Ask       string          `wire:"message,elicitation_request"`
	Schema    json.RawMessage `wire:"schema,elicitation_request?"`
	URL       string          `wire:"url,elicitation_request?"`
	Action    string          `wire:"action,elicitation"`
	// Attempt numbers a continued event (1: the turn's first).
	Attempt int `wire:"attempt,continued"`

	Raw json.RawMessage `wire:"-raw"` // a type this version does not know
}

// MarshalJSON implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) { return encodeWire(e) }

// UnmarshalJSON implements json.Unmarshaler. Unknown types keep their JSON.
func (e *Event) UnmarshalJSON(b []byte) error { return decodeWire(b, e) }

// AgentEvent types: changes to the set of conversations.
const (
	AgentCreated = "created"
	AgentDeleted = "deleted"
	AgentRenamed = "renamed"
	// AgentToolServer reports a tool server's state change; live only, never stored.
	AgentToolServer = "tool_server"
	// AgentResourceUpdated: a tool server's resource that a message
	// attached changed (resource.go); live only, never stored.
	AgentResourceUpdated = "resource_updated"
	// AgentTurnStarted and AgentTurnEnded tell lists which conversations
	// are running without subscribing to every token.
	AgentTurnStarted = "turn_started"
	AgentTurnEnded   = "turn_ended"
	// AgentUpdated carries the changed settings of a conversation (see
	// settings.go).
	// With head, it says the conversation's head moved to another branch
	// (branch.go): clients reload its history.
	AgentUpdated = "updated"
	// AgentWaiting carries a conversation's tool calls waiting for a
	// person's decision, each time that list changes (approval.go), so a
	// list can mark the conversations that wait for someone; empty once
	// none waits. The store fills Waiting as of the record's place in its
	// batch.
	AgentWaiting = "waiting"
	// AgentFileStatus carries a file's status as its ingestion goes
	// (file.go), on its owner's streams; live only, never stored.
	AgentFileStatus = "file_status"
)

// AgentEvent is a change to the set of conversations.
type AgentEvent struct {
	Type           string          `wire:"type,*"`
	ConversationID string          `wire:"conversation_id,created,deleted,renamed,turn_started,turn_ended,updated,waiting"`
	Title          string          `wire:"title,created?,renamed,updated?"`
	Agent          string          `wire:"agent,created?,updated?"` // the conversation's agent (agentdef.go)
	Parent         *Parent         `wire:"parent,created?"`         // of a delegated child (delegate.go)
	Model          *string         `wire:"model,updated?"`
	SystemPrompt   *string         `wire:"system_prompt,updated?"`
	Params         *Params         `wire:"params,updated?"`
	Tools          *[]string       `wire:"tools,updated?"` // the conversation's tool choice; ["*"]: all again
	Head           string          `wire:"head,updated?"`  // branch.go
	Pinned         *bool           `wire:"pinned,updated?"`
	Archived       *bool           `wire:"archived,updated?"`
	Project        *string         `wire:"project,created?,updated?"` // the conversation's project (project.go); "" moved out
	Server         *ToolServer     `wire:"server,tool_server?"`
	Resource       *ResourceRef    `wire:"resource,resource_updated"`
	Waiting        []string        `wire:"waiting,waiting"` // call ids; [] when none waits
	File           *File           `wire:"file,file_status"`
	Raw            json.RawMessage `wire:"-raw"` // a type this version does not know
}

// MarshalJSON implements json.Marshaler.
func (a AgentEvent) MarshalJSON() ([]byte, error) { return encodeWire(a) }

// UnmarshalJSON implements json.Unmarshaler. Unknown types keep their JSON.
func (a *AgentEvent) UnmarshalJSON(b []byte) error { return decodeWire(b, a) }

// AllEvent kinds.
const (
	KindAgent        = "agent"
	KindConversation = "conversation"
)

// AllEvent is one entry of the event log: an AgentEvent or a conversation's
// Event, with its cursor. Seq is 0 for events of temp conversations, which
// are never stored.
type AllEvent struct {
	Kind           string          `wire:"type,*"` // KindAgent or KindConversation
	Seq            int64           `wire:"seq,*"`
	ID             string          `wire:"id,*"`
	Date           time.Time       `wire:"date,*"`
	ConversationID string          `wire:"conversation_id,conversation"` // of an agent event: its event's
	Agent          *AgentEvent     `wire:"event,agent"`
	Event          *Event          `wire:"event,conversation"`
	Raw            json.RawMessage `wire:"-raw"`
	// Owner is the owner of the event's conversation (access.go), filled
	// where it is published; not on the wire.
	Owner string `wire:"-"`
}

// EventType is the type of the inner event: what SSE names the frame.
func (a AllEvent) EventType() string {
	switch {
	case a.Agent != nil:
		return a.Agent.Type
	case a.Event != nil:
		return a.Event.Type
	}
	return a.Kind
}

// Inner is the inner event: the AgentEvent or the Event.
func (a AllEvent) Inner() any {
	if a.Agent != nil {
		return a.Agent
	}
	return a.Event
}

// MarshalJSON implements json.Marshaler.
func (a AllEvent) MarshalJSON() ([]byte, error) {
	if a.Kind != KindAgent && a.Kind != KindConversation && len(a.Raw) == 0 {
		return nil, fmt.Errorf("all event: unknown kind %q", a.Kind)
	}
	return encodeWire(a)
}

// UnmarshalJSON implements json.Unmarshaler. Unknown kinds keep their JSON.
func (a *AllEvent) UnmarshalJSON(b []byte) error {
	if err := decodeWire(b, a); err != nil {
		return err
	}
	if a.Agent != nil {
		a.ConversationID = a.Agent.ConversationID
	}
	return nil
}
