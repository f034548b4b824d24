package relay

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentik/agentik/internal/agent"
)

// Decode is e.Decode() for a protocol that reads every event of a turn
// (each projection re-shapes the events, so it decodes them), with the
// event an answer is made of read by a scan: a conversation's
// append_text event, laid out as the codec writes it,
//
//	{"type":"conversation","seq":7,"id":"…","date":"…","conversation_id":"…","event":{"type":"append_text","text":"…"}}
//
// gives the same AllEvent without the codec's reflective decode of the
// envelope and then of the inner event (of a streamed answer's bytes,
// most are that text). Any other event, or bytes laid out otherwise (an
// escaped id, another field), are decoded in full; both ways give equal
// events (TestDecodeMatchesCodec).
func Decode(e *agent.Encoded) (agent.AllEvent, error) {
	if e.Kind == agent.KindConversation && e.Type == agent.EventAppendText {
		if ev, ok := appendText(e.JSON); ok {
			return ev, nil
		}
	}
	return e.Decode()
}

// scan is a cursor over an event's JSON; bad once a byte does not match.
type scan struct {
	b   []byte
	i   int
	bad bool
}

// lit consumes s.
func (s *scan) lit(str string) {
	if s.bad || !bytes.HasPrefix(s.b[s.i:], []byte(str)) {
		s.bad = true
		return
	}
	s.i += len(str)
}

// plain consumes a string's content and its closing quote (the opening
// one ends the literal before it): printable ASCII without escapes, which
// decodes to itself.
func (s *scan) plain() string {
	if s.bad {
		return ""
	}
	rest := s.b[s.i:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		s.bad = true
		return ""
	}
	for _, c := range rest[:j] {
		if c < 0x20 || c > 0x7e || c == '\\' {
			s.bad = true
			return ""
		}
	}
	s.i += j + 1
	return string(rest[:j])
}

// seq consumes a positive decimal integer without leading zeros.
func (s *scan) seq() int64 {
	if s.bad {
		return 0
	}
	j := s.i
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		j++
	}
	if j == s.i || s.b[s.i] == '0' {
		s.bad = true
		return 0
	}
	n, err := strconv.ParseInt(string(s.b[s.i:j]), 10, 64)
	if err != nil {
		s.bad = true
		return 0
	}
	s.i = j
	return n
}

// appendText reads an append_text event laid out exactly as the codec
// writes it; false for anything else.
func appendText(b []byte) (agent.AllEvent, bool) {
	s := &scan{b: b}
	s.lit(`{"type":"conversation","seq":`)
	seq := s.seq()
	s.lit(`,"id":"`)
	id := s.plain()
	s.lit(`,"date":"`)
	date := s.plain()
	s.lit(`,"conversation_id":"`)
	conv := s.plain()
	s.lit(`,"event":{"type":"append_text","text":`)
	if s.bad || !bytes.HasSuffix(b, []byte(`}}`)) || len(b)-2 < s.i {
		return agent.AllEvent{}, false
	}
	text, ok := jsonString(b[s.i : len(b)-2])
	if !ok {
		return agent.AllEvent{}, false
	}
	ev := agent.AllEvent{Kind: agent.KindConversation, Seq: seq, ID: id, ConversationID: conv, Event: &agent.Event{Type: agent.EventAppendText, Text: text}}
	if date != "" { // as the codec reads a date
		t, err := time.Parse(time.RFC3339Nano, date)
		if err != nil {
			return agent.AllEvent{}, false
		}
		ev.Date = t.UTC()
	}
	return ev, true
}

// jsonString decodes lit, which must be one JSON string and nothing else.
// Text without escapes is its own value (checked: no quote inside, no
// control character, valid UTF-8, which encoding/json would replace);
// text with escapes is decoded by encoding/json, the string alone.
func jsonString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	in := lit[1 : len(lit)-1]
	plain := true
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", false
	}
	return s, true
}

// messageHead starts the inner event of a message event as the codec
// writes it: the message's type, then its id.
const messageHead = `{"type":"message","message":{"type":"`

// Message reads the type and id of a message event's message by a scan of
// its head, as the codec writes it (type, then id, plain strings), without
// decoding the rest: a turn's last message holds its whole answer, which a
// stream that wants only its id need not decode. ok is false for any other
// event or layout (then decode it).
func Message(e *agent.Encoded) (typ, id string, ok bool) {
	if e.Kind != agent.KindConversation || e.Type != agent.EventMessage {
		return "", "", false
	}
	s := &scan{b: e.Inner()}
	s.lit(messageHead)
	typ = s.plain()
	s.lit(`,"id":"`)
	id = s.plain()
	if s.bad {
		return "", "", false
	}
	return typ, id, true
}
