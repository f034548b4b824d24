package agent

import (
	"encoding/json"
	"fmt"
	"time"
)

// TimeFormat is how every date crosses the wire: RFC 3339, milliseconds, UTC.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t in the wire format.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// wireTime is time.Time with the wire encoding; used inside MarshalJSON only.
type wireTime time.Time

func (t wireTime) MarshalJSON() ([]byte, error) {
	return json.Marshal(FormatTime(time.Time(t)))
}

func (t *wireTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*t = wireTime{}
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = wireTime(v.UTC())
	return nil
}

// Content types.
const (
	ContentText  = "text"
	ContentImage = "image"
)

// Content is one part of a message: text or an image. A part of a type this
// version does not know keeps its JSON in Raw and is written back unchanged.
type Content struct {
	Type string
	Body string // text
	Mime string // image
	Data string // image, base64
	Raw  json.RawMessage
}

// Text is a text Content.
func Text(body string) Content { return Content{Type: ContentText, Body: body} }

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case ContentText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Body string `json:"body"`
		}{c.Type, c.Body})
	case ContentImage:
		return json.Marshal(struct {
			Type string `json:"type"`
			Mime string `json:"mime"`
			Data string `json:"data"`
		}{c.Type, c.Mime, c.Data})
	}
	if len(c.Raw) > 0 {
		return c.Raw, nil
	}
	return json.Marshal(struct {
		Type string `json:"type"`
	}{c.Type})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(b []byte) error {
	var w struct {
		Type string `json:"type"`
		Body string `json:"body"`
		Mime string `json:"mime"`
		Data string `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, Body: w.Body, Mime: w.Mime, Data: w.Data}
	if w.Type != ContentText && w.Type != ContentImage {
		c.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// Usage counts the tokens of a model call or of a whole turn.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.PromptTokens + o.PromptTokens, u.CompletionTokens + o.CompletionTokens, u.TotalTokens + o.TotalTokens}
}

// Message types: the persisted history.
const (
	MessageUser       = "user_message"
	MessageAssistant  = "assistant_message"
	MessageToolCall   = "tool_call"
	MessageToolResult = "tool_result"
	MessageError      = "error"
)

// Message is one persisted entry of a conversation's history. Type selects
// which fields are meaningful; the JSON carries exactly that type's fields.
type Message struct {
	Type           string
	ID             string
	ConversationID string
	Seq            int64
	Date           time.Time

	Content     []Content // user, assistant
	ClientID    string    // user
	Reasoning   string    // assistant
	Interrupted bool      // assistant
	Usage       *Usage    // assistant

	CallID    string // tool_call, tool_result
	Name      string // tool_call, tool_result
	Arguments string // tool_call: JSON text
	Result    string // tool_result
	IsError   bool   // tool_result

	Error string // error: the message
	Code  string // error

	Raw json.RawMessage // a type this version does not know
}

type messageHead struct {
	Type           string   `json:"type"`
	ID             string   `json:"id"`
	ConversationID string   `json:"conversation_id"`
	Seq            int64    `json:"seq"`
	Date           wireTime `json:"date"`
}

// MarshalJSON implements json.Marshaler.
func (m Message) MarshalJSON() ([]byte, error) {
	h := messageHead{m.Type, m.ID, m.ConversationID, m.Seq, wireTime(m.Date)}
	content := m.Content
	if content == nil {
		content = []Content{}
	}
	switch m.Type {
	case MessageUser:
		return json.Marshal(struct {
			messageHead
			Content  []Content `json:"content"`
			ClientID string    `json:"client_id,omitempty"`
		}{h, content, m.ClientID})
	case MessageAssistant:
		return json.Marshal(struct {
			messageHead
			Content     []Content `json:"content"`
			Reasoning   string    `json:"reasoning,omitempty"`
			Interrupted bool      `json:"interrupted,omitempty"`
			Usage       *Usage    `json:"usage,omitempty"`
		}{h, content, m.Reasoning, m.Interrupted, m.Usage})
	case MessageToolCall:
		return json.Marshal(struct {
			messageHead
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{h, m.CallID, m.Name, m.Arguments})
	case MessageToolResult:
		return json.Marshal(struct {
			messageHead
			CallID  string `json:"call_id"`
			Name    string `json:"name"`
			Result  string `json:"result"`
			IsError bool   `json:"is_error,omitempty"`
		}{h, m.CallID, m.Name, m.Result, m.IsError})
	case MessageError:
		return json.Marshal(struct {
			messageHead
			Message string `json:"message"`
			Code    string `json:"code,omitempty"`
		}{h, m.Error, m.Code})
	}
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	return json.Marshal(h)
}

// UnmarshalJSON implements json.Unmarshaler. Unknown types keep their JSON.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w struct {
		messageHead
		Content     []Content `json:"content"`
		ClientID    string    `json:"client_id"`
		Reasoning   string    `json:"reasoning"`
		Interrupted bool      `json:"interrupted"`
		Usage       *Usage    `json:"usage"`
		CallID      string    `json:"call_id"`
		Name        string    `json:"name"`
		Arguments   string    `json:"arguments"`
		Result      string    `json:"result"`
		IsError     bool      `json:"is_error"`
		Message     string    `json:"message"`
		Code        string    `json:"code"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message{
		Type: w.Type, ID: w.ID, ConversationID: w.ConversationID, Seq: w.Seq, Date: time.Time(w.Date),
		Content: w.Content, ClientID: w.ClientID, Reasoning: w.Reasoning, Interrupted: w.Interrupted, Usage: w.Usage,
		CallID: w.CallID, Name: w.Name, Arguments: w.Arguments, Result: w.Result, IsError: w.IsError,
		Error: w.Message, Code: w.Code,
	}
	switch w.Type {
	case MessageUser, MessageAssistant, MessageToolCall, MessageToolResult, MessageError:
	default:
		m.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

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
)

// Event is one step of a conversation: a persisted message or live progress
// of a turn. Every turn ends with exactly one EventEnd.
type Event struct {
	Type string

	Message *Message // message

	Text string // append_text
	Mime string // append_image
	Data string // append_image

	CallID    string // tool_call, tool_result
	Name      string // tool_call, tool_result
	Arguments string // tool_call
	Result    string // tool_result
	IsError   bool   // tool_result

	Error string // error: the message
	Code  string // error

	Usage *Usage // end

	Raw json.RawMessage // a type this version does not know
}

// MarshalJSON implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) {
	switch e.Type {
	case EventMessage:
		return json.Marshal(struct {
			Type    string   `json:"type"`
			Message *Message `json:"message"`
		}{e.Type, e.Message})
	case EventStartReasoning, EventStartResponse, EventInterrupted:
		return json.Marshal(struct {
			Type string `json:"type"`
		}{e.Type})
	case EventAppendText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{e.Type, e.Text})
	case EventAppendImage:
		return json.Marshal(struct {
			Type string `json:"type"`
			Mime string `json:"mime"`
			Data string `json:"data"`
		}{e.Type, e.Mime, e.Data})
	case EventToolCall:
		return json.Marshal(struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{e.Type, e.CallID, e.Name, e.Arguments})
	case EventToolResult:
		return json.Marshal(struct {
			Type    string `json:"type"`
			CallID  string `json:"call_id"`
			Name    string `json:"name"`
			Result  string `json:"result"`
			IsError bool   `json:"is_error,omitempty"`
		}{e.Type, e.CallID, e.Name, e.Result, e.IsError})
	case EventError:
		return json.Marshal(struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Code    string `json:"code,omitempty"`
		}{e.Type, e.Error, e.Code})
	case EventEnd:
		return json.Marshal(struct {
			Type  string `json:"type"`
			Usage *Usage `json:"usage,omitempty"`
		}{e.Type, e.Usage})
	}
	if len(e.Raw) > 0 {
		return e.Raw, nil
	}
	return json.Marshal(struct {
		Type string `json:"type"`
	}{e.Type})
}

// UnmarshalJSON implements json.Unmarshaler. Unknown types keep their JSON.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w struct {
		Type      string          `json:"type"`
		Message   json.RawMessage `json:"message"`
		Text      string          `json:"text"`
		Mime      string          `json:"mime"`
		Data      string          `json:"data"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Result    string          `json:"result"`
		IsError   bool            `json:"is_error"`
		Code      string          `json:"code"`
		Usage     *Usage          `json:"usage"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Event{
		Type: w.Type, Text: w.Text, Mime: w.Mime, Data: w.Data,
		CallID: w.CallID, Name: w.Name, Arguments: w.Arguments, Result: w.Result, IsError: w.IsError,
		Code: w.Code, Usage: w.Usage,
	}
	switch w.Type {
	case EventMessage:
		e.Message = new(Message)
		if err := json.Unmarshal(w.Message, e.Message); err != nil {
			return fmt.Errorf("message event: %w", err)
		}
	case EventError:
		if err := json.Unmarshal(w.Message, &e.Error); err != nil {
			return fmt.Errorf("error event: %w", err)
		}
	case EventStartReasoning, EventStartResponse, EventAppendText, EventAppendImage,
		EventToolCall, EventToolResult, EventInterrupted, EventEnd:
	default:
		e.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// AgentEvent types: changes to the set of conversations.
const (
	AgentCreated = "created"
	AgentDeleted = "deleted"
	AgentRenamed = "renamed"
	// AgentToolServer reports a tool server's state change; live only, never stored.
	AgentToolServer = "tool_server"
	// AgentTurnStarted and AgentTurnEnded tell lists which conversations
	// are running without subscribing to every token.
	AgentTurnStarted = "turn_started"
	AgentTurnEnded   = "turn_ended"
)

// AgentEvent is a change to the set of conversations.
type AgentEvent struct {
	Type           string          `json:"type"`
	ConversationID string          `json:"conversation_id,omitempty"`
	Title          string          `json:"title,omitempty"`
	Server         *ToolServer     `json:"server,omitempty"` // tool_server
	Raw            json.RawMessage `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (a AgentEvent) MarshalJSON() ([]byte, error) {
	switch a.Type {
	case AgentCreated:
		return json.Marshal(struct {
			Type           string `json:"type"`
			ConversationID string `json:"conversation_id"`
			Title          string `json:"title,omitempty"`
		}{a.Type, a.ConversationID, a.Title})
	case AgentDeleted, AgentTurnStarted, AgentTurnEnded:
		return json.Marshal(struct {
			Type           string `json:"type"`
			ConversationID string `json:"conversation_id"`
		}{a.Type, a.ConversationID})
	case AgentRenamed:
		return json.Marshal(struct {
			Type           string `json:"type"`
			ConversationID string `json:"conversation_id"`
			Title          string `json:"title"`
		}{a.Type, a.ConversationID, a.Title})
	case AgentToolServer:
		return json.Marshal(struct {
			Type   string      `json:"type"`
			Server *ToolServer `json:"server"`
		}{a.Type, a.Server})
	}
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	type plain AgentEvent
	return json.Marshal(plain(a))
}

// UnmarshalJSON implements json.Unmarshaler. Unknown types keep their JSON.
func (a *AgentEvent) UnmarshalJSON(b []byte) error {
	type plain AgentEvent
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*a = AgentEvent(p)
	switch a.Type {
	case AgentCreated, AgentDeleted, AgentRenamed, AgentToolServer, AgentTurnStarted, AgentTurnEnded:
	default:
		a.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// AllEvent kinds.
const (
	KindAgent        = "agent"
	KindConversation = "conversation"
)

// AllEvent is one entry of the event log: an AgentEvent or a conversation's
// Event, with its cursor. Seq is 0 for events of temp conversations, which
// are never stored.
type AllEvent struct {
	Kind           string // KindAgent or KindConversation
	Seq            int64
	ID             string
	Date           time.Time
	ConversationID string
	Agent          *AgentEvent // KindAgent
	Event          *Event      // KindConversation
	Raw            json.RawMessage
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
	switch a.Kind {
	case KindAgent:
		return json.Marshal(struct {
			Type  string      `json:"type"`
			Seq   int64       `json:"seq"`
			ID    string      `json:"id"`
			Date  wireTime    `json:"date"`
			Event *AgentEvent `json:"event"`
		}{a.Kind, a.Seq, a.ID, wireTime(a.Date), a.Agent})
	case KindConversation:
		return json.Marshal(struct {
			Type           string   `json:"type"`
			Seq            int64    `json:"seq"`
			ID             string   `json:"id"`
			Date           wireTime `json:"date"`
			ConversationID string   `json:"conversation_id"`
			Event          *Event   `json:"event"`
		}{a.Kind, a.Seq, a.ID, wireTime(a.Date), a.ConversationID, a.Event})
	}
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	return nil, fmt.Errorf("all event: unknown kind %q", a.Kind)
}

// UnmarshalJSON implements json.Unmarshaler. Unknown kinds keep their JSON.
func (a *AllEvent) UnmarshalJSON(b []byte) error {
	var w struct {
		Type           string          `json:"type"`
		Seq            int64           `json:"seq"`
		ID             string          `json:"id"`
		Date           wireTime        `json:"date"`
		ConversationID string          `json:"conversation_id"`
		Event          json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = AllEvent{Kind: w.Type, Seq: w.Seq, ID: w.ID, Date: time.Time(w.Date), ConversationID: w.ConversationID}
	switch w.Type {
	case KindAgent:
		a.Agent = new(AgentEvent)
		if err := json.Unmarshal(w.Event, a.Agent); err != nil {
			return fmt.Errorf("agent event: %w", err)
		}
		a.ConversationID = a.Agent.ConversationID
	case KindConversation:
		a.Event = new(Event)
		if err := json.Unmarshal(w.Event, a.Event); err != nil {
			return fmt.Errorf("conversation event: %w", err)
		}
	default:
		a.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// Conversation is the summary of one conversation.
type Conversation struct {
	ID           string
	Title        string
	Temp         bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
	MessageCount int
	Running      bool
	TurnSeq      int64 // seq of the running turn's first event; 0 when idle
}

type conversationJSON struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Temp         bool     `json:"temp"`
	CreatedAt    wireTime `json:"created_at"`
	UpdatedAt    wireTime `json:"updated_at"`
	MessageCount int      `json:"message_count"`
	Running      bool     `json:"running"`
	TurnSeq      int64    `json:"turn_seq,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (c Conversation) MarshalJSON() ([]byte, error) {
	return json.Marshal(conversationJSON{c.ID, c.Title, c.Temp, wireTime(c.CreatedAt), wireTime(c.UpdatedAt), c.MessageCount, c.Running, c.TurnSeq})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Conversation) UnmarshalJSON(b []byte) error {
	var w conversationJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Conversation{w.ID, w.Title, w.Temp, time.Time(w.CreatedAt), time.Time(w.UpdatedAt), w.MessageCount, w.Running, w.TurnSeq}
	return nil
}
