package agent

import (
	"encoding/json"
	"strings"
	"time"
)

// Message types: the persisted history.
const (
	MessageUser       = "user_message"
	MessageAssistant  = "assistant_message"
	MessageToolCall   = "tool_call"
	MessageToolResult = "tool_result"
	MessageError      = "error"
	MessageSummary    = "summary_message" // a compaction of working memory (context.go)
)

// Message is one persisted entry of a conversation's history. Type selects
// which fields are meaningful; the JSON carries exactly that type's fields,
// as each field's wire tag says (see codec.go).
type Message struct {
	Type           string    `wire:"type,*"`
	ID             string    `wire:"id,*"`
	ConversationID string    `wire:"conversation_id,*"`
	Seq            int64     `wire:"seq,*"`
	Date           time.Time `wire:"date,*"`
	// ParentID is the message this one follows on its path ("" for the
	// first); Siblings, on a history read, its place among the messages
	// that follow the same parent (branch.go). Siblings is never stored.
	ParentID string    `wire:"parent_id,*?"`
	Siblings *Siblings `wire:"siblings,*?"`

	Content  []Content `wire:"content,user_message,assistant_message"`
	ClientID string    `wire:"client_id,user_message?"`
	// SentBy and SentByName mark a message an admin sent into another
	// user's conversation, acting as admin (actas.go): her user id and
	// her email or name as it was then.
	SentBy      string `wire:"sent_by,user_message?"`
	SentByName  string `wire:"sent_by_name,user_message?"`
	Reasoning   string `wire:"reasoning,assistant_message?"`
	Interrupted bool   `wire:"interrupted,assistant_message?"`
	Usage       *Usage `wire:"usage,assistant_message?"`
	// Agent and AgentVersion say which agent answered, and which version
	// of its definition the turn ran with (agentdef.go).
	Agent        string `wire:"agent,assistant_message?"`
	AgentVersion int    `wire:"agent_version,assistant_message?"`
	// Model is the model that wrote the answer: the conversation's model
	// id, or the default model's name (Runner.DefaultModelName); "" when unknown
	// (answers written before it was recorded, imported ones).
	Model string `wire:"model,assistant_message?"`
	// Citations are the passages of knowledge (file_search) the answer
	// was given (knowledge.go).
	Citations []Citation `wire:"citations,assistant_message?"`

	CallID    string `wire:"call_id,tool_call,tool_result"`
	Name      string `wire:"name,tool_call,tool_result"`
	Arguments string `wire:"arguments,tool_call"` // JSON text
	Result    string `wire:"result,tool_result"`
	IsError   bool   `wire:"is_error,tool_result?"`
	// ChildID, on the result of a delegation (agent__<slug>), is the child
	// conversation the other agent answered in (delegate.go).
	ChildID string `wire:"child_conversation_id,tool_result?"`
	// Images that came with the result (toolcall.go).
	Images []Content `wire:"images,tool_result?"`
	// Resources the result linked or embedded (toolcall.go).
	Resources []Content `wire:"resources,tool_result?"`
	// Memory, on the result of a memory tool that changed a block, is the
	// change (memory.go): the UI shows it and offers to revert it.
	Memory *MemoryChange `wire:"memory,tool_result?"`

	Error string `wire:"message,error"` // the error's message
	Code  string `wire:"code,error?"`

	Summary      string `wire:"summary,summary_message"`
	Replaces     int    `wire:"replaces,summary_message"`      // working-memory entries it stands for
	TokensBefore int    `wire:"tokens_before,summary_message"` // estimated prompt tokens before the compaction
	TokensAfter  int    `wire:"tokens_after,summary_message"`  // … and after
	// The span of a summary (absent on summaries written before it was
	// recorded): KeptID is the first message it kept verbatim, always a
	// user message (the divider belongs just before it); FirstID and
	// LastID are the first and the last user message of the turns it
	// summarized, FirstText and LastText their opening words.
	KeptID    string `wire:"kept_id,summary_message?"`
	FirstID   string `wire:"first_id,summary_message?"`
	LastID    string `wire:"last_id,summary_message?"`
	FirstText string `wire:"first_text,summary_message?"`
	LastText  string `wire:"last_text,summary_message?"`

	Raw json.RawMessage `wire:"-raw"` // a type this version does not know
}

// MarshalJSON implements json.Marshaler.
func (m Message) MarshalJSON() ([]byte, error) { return encodeWire(m) }

// UnmarshalJSON implements json.Unmarshaler. Unknown types keep their JSON.
func (m *Message) UnmarshalJSON(b []byte) error { return decodeWire(b, m) }

// memory is the working-memory entry of a tool result.
func (m Message) memory() ModelMessage {
	body := m.Result
	if m.IsError && !strings.HasPrefix(body, "error") {
		body = "error: " + body
	}
	return ModelMessage{Role: RoleTool, ToolCallID: m.CallID, Name: m.Name, Content: append([]Content{Text(body)}, m.Images...)}
}
