package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Encoded is one AllEvent as bytes: its JSON, encoded once where the event
// became durable (the store's writer) or, for an event that is never
// stored, where it was published; every later hop (the broker, the
// WebSocket, the SSE routes, replay) writes these bytes and decodes
// nothing. Kind, ConversationID, Type and Seq say what a hop needs to
// route it. Read JSON and Inner, never modify them: they are shared.
type Encoded struct {
	Seq            int64
	ID             string
	Kind           string // KindAgent or KindConversation (or an unknown kind)
	ConversationID string // of an agent event: its event's
	Type           string // the inner event's type (see AllEvent.EventType)
	JSON           []byte // the AllEvent
	// Owner is the owner of ConversationID (access.go): what a member's
	// subscription is matched by. "" for an event of no conversation.
	Owner string
	inner int // where the inner event starts in JSON; 0: it has none
}

// eventKey precedes the inner event in an AllEvent's JSON. Every field the
// codec writes before it is a string or a number, and a string's quotes
// are escaped, so its first occurrence is the envelope's.
var eventKey = []byte(`,"event":`)

// Encode encodes ev once, for every hop after it.
func Encode(ev AllEvent) (Encoded, error) { return EncodeRef(&ev) }

// EncodeRef is Encode of *ev without a copy of it: the store's writer
// encodes each streamed token's event in place.
func EncodeRef(ev *AllEvent) (Encoded, error) {
	var (
		b   []byte
		err error
	)
	if ev.Kind == KindAgent || ev.Kind == KindConversation {
		// The codec's output is compact and HTML-escaped already (every
		// part is a number, a date, a plain string or json.Marshal's
		// output), so json.Marshal's pass over it would change nothing.
		// It is what MarshalJSON returns.
		b, err = encodeValue(reflect.ValueOf(ev).Elem())
	} else {
		b, err = json.Marshal(ev) // raw JSON of an unknown kind: compacted
	}
	if err != nil {
		return Encoded{}, err
	}
	e := Encoded{Seq: ev.Seq, ID: ev.ID, Kind: ev.Kind, ConversationID: ev.ConversationID, Type: ev.EventType(), JSON: b, Owner: ev.Owner}
	if ev.Agent != nil || ev.Event != nil {
		e.inner = innerStart(b)
	}
	return e, nil
}

// StoredEvent wraps the stored JSON of an event, whose seq, id, kind and
// conversation are known from its row, without decoding it: only the inner
// event's type is read, by a scan (a decode only if the type is escaped).
func StoredEvent(seq int64, id, kind, conversationID string, b []byte) Encoded {
	e := Encoded{Seq: seq, ID: id, Kind: kind, ConversationID: conversationID, JSON: b, Type: kind}
	if kind != KindAgent && kind != KindConversation {
		return e
	}
	if e.inner = innerStart(b); e.inner == 0 {
		return e
	}
	in := b[e.inner : len(b)-1]
	const typeKey = `{"type":"`
	if rest, ok := bytes.CutPrefix(in, []byte(typeKey)); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			e.Type = eventType(rest[:end])
			return e
		}
	}
	var t struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(in, &t) == nil && t.Type != "" {
		e.Type = t.Type
	}
	return e
}

// innerStart is where the inner event starts in the JSON of an AllEvent of
// a known kind, whose "event" is its last field; 0 if it has none.
func innerStart(b []byte) int {
	i := bytes.Index(b, eventKey)
	if i < 0 || len(b) == 0 || b[len(b)-1] != '}' {
		return 0
	}
	return i + len(eventKey)
}

// Inner is the JSON of the inner event (the Event or the AgentEvent), a
// slice of JSON; nil when there is none.
func (e Encoded) Inner() []byte {
	if e.inner == 0 {
		return nil
	}
	return e.JSON[e.inner : len(e.JSON)-1]
}

// IsEnd reports whether this is a conversation's end event.
func (e Encoded) IsEnd() bool { return e.Kind == KindConversation && e.Type == EventEnd }

// messagePrefix starts the inner event of a message event as the codec
// writes it: the message's type is its first field.
var messagePrefix = []byte(`{"type":"message","message":{"type":"`)

// MessageType is the type of a message event's message (MessageUser,
// MessageSummary, …), "" for any other event. It is read by a scan of the
// stored bytes, so a turn's answer (a message holding the whole text) is
// not decoded only to learn its type; bytes laid out otherwise are
// decoded.
func (e Encoded) MessageType() string {
	if e.Kind != KindConversation || e.Type != EventMessage {
		return ""
	}
	if rest, ok := bytes.CutPrefix(e.Inner(), messagePrefix); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return string(rest[:end])
		}
	}
	ev, err := e.Decode()
	if err != nil || ev.Event == nil || ev.Event.Message == nil {
		return ""
	}
	return ev.Event.Message.Type
}

// Decode decodes the event, for a consumer that decides by its content
// (the hops that only pass it on never call it).
func (e Encoded) Decode() (AllEvent, error) {
	var ev AllEvent
	err := json.Unmarshal(e.JSON, &ev)
	return ev, err
}

// eventType is b as a string: a constant for the events a replay is made
// of, so that reading one allocates nothing.
func eventType(b []byte) string {
	switch string(b) { // compared without a copy
	case EventAppendText:
		return EventAppendText
	case EventStartResponse:
		return EventStartResponse
	case EventStartReasoning:
		return EventStartReasoning
	case EventEnd:
		return EventEnd
	case EventMessage:
		return EventMessage
	case EventToolCall:
		return EventToolCall
	case EventToolResult:
		return EventToolResult
	}
	return string(b)
}
