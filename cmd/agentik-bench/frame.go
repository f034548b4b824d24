package main

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// decodeFrame reads a server frame into f. The frames a load sends by the
// hundred thousand (an event frame whose inner event has no field but its
// type or a plain text, and caught_up) are read by fastFrame, which checks
// every byte it skips against the layout the server writes; any other
// frame, or one that does not match that layout exactly, goes through
// encoding/json. Both give the same frame (TestDecodeFrameMatchesJSON):
// the bench's clients share the cores with the server they measure, and a
// full JSON decode per frame cost them more CPU than the server spent
// sending it.
//
// A client that skims (skimSeqs, skimTexts) reads less of an event frame
// than its full decode: see skim.
func decodeFrame(b []byte, f *frame, ev *wireEvent, sk skim) error {
	if fastFrame(b, f, ev, sk) {
		return nil
	}
	*f, *ev = frame{}, wireEvent{}
	return json.Unmarshal(b, f)
}

// skim is how much of an event frame a client reads.
type skim int

const (
	// skimNone reads every field the bench knows.
	skimNone skim = iota
	// skimSeqs reads a conversation event frame of any inner type only up
	// to its inner type (its text and message are left empty): for a
	// client that checks only which events arrive, in which order (storm).
	skimSeqs
	// skimTexts reads a conversation event frame up to its inner type,
	// and an append_text event's text too; an agent event frame up to its
	// inner type. For a client that checks a turn's text and its end,
	// exactly once and in order, and nothing of its messages
	// (connections): 10,000 of them decoding every user message, answer
	// and agent event in full took as much CPU as the server spent
	// sending them, on the same two cores.
	skimTexts
)

// frameScan is a cursor over one frame.
type frameScan struct {
	b   []byte
	i   int
	bad bool
}

// lit consumes s, or marks the scan bad.
func (s *frameScan) lit(str string) {
	if s.bad || !bytes.HasPrefix(s.b[s.i:], []byte(str)) {
		s.bad = true
		return
	}
	s.i += len(str)
}

// str consumes a JSON string without escapes and its closing quote (the
// opening one is part of the literal before it), or marks the scan bad.
func (s *frameScan) str() string {
	if s.bad {
		return ""
	}
	rest := s.b[s.i:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		s.bad = true
		return ""
	}
	for _, c := range rest[:j] {
		if c < 0x20 || c >= 0x80 { // control characters; non-ASCII (json checks UTF-8)
			s.bad = true
			return ""
		}
	}
	s.i += j + 1
	return string(rest[:j])
}

// skipStr is str without keeping the text.
func (s *frameScan) skipStr() {
	if s.bad {
		return
	}
	rest := s.b[s.i:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		s.bad = true
		return
	}
	s.i += j + 1
}

// int consumes a non-negative decimal integer.
func (s *frameScan) int() int64 {
	if s.bad {
		return 0
	}
	j := s.i
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(s.b[s.i:j]), 10, 64)
	if err != nil || j > s.i+1 && s.b[s.i] == '0' {
		s.bad = true
		return 0
	}
	s.i = j
	return n
}

// fastFrame reads the two hot frame layouts; false means "not one of
// them": f and ev are then garbage and the caller decodes in full.
//
//	{"type":"caught_up","sub":"s1","seq":7}
//	{"type":"event","sub":"s1","event":{"type":"conversation","seq":7,"id":"…","date":"…","conversation_id":"…","event":{"type":"append_text","text":" t7"}}}
//
// The bare relay's event frames are the second without id and date: its
// clients read them as agentik's do.
func fastFrame(b []byte, f *frame, ev *wireEvent, sk skim) bool {
	*f, *ev = frame{}, wireEvent{}
	s := &frameScan{b: b}
	s.lit(`{"type":"`)
	f.Type = s.str()
	switch f.Type {
	case "caught_up":
		s.lit(`,"sub":"`)
		f.Sub = s.str()
		s.lit(`,"seq":`)
		f.Seq = s.int()
		s.lit(`}`)
		return !s.bad && s.i == len(b)
	case "event":
	default:
		return false
	}
	s.lit(`,"sub":"`)
	f.Sub = s.str()
	if sk == skimTexts && bytes.HasPrefix(b[s.i:], []byte(`,"event":{"type":"agent","seq":`)) {
		//	{"type":"event","sub":"s1","event":{"type":"agent","seq":7,"id":"…","date":"…","event":{"type":"turn_started",…}}}
		s.lit(`,"event":{"type":"agent","seq":`)
		ev.Kind = "agent"
		ev.Seq = s.int()
		s.lit(`,"id":"`)
		s.skipStr()
		s.lit(`,"date":"`)
		s.skipStr()
		s.lit(`,"event":{"type":"`)
		ev.Event.Type = s.str()
		if s.bad || !bytes.HasSuffix(b, []byte(`}}}`)) {
			return false
		}
		f.Event = ev
		return true
	}
	s.lit(`,"event":{"type":"conversation","seq":`)
	ev.Kind = "conversation"
	ev.Seq = s.int()
	if !s.bad && bytes.HasPrefix(b[s.i:], []byte(`,"id":"`)) { // the bare relay's frames have neither
		s.lit(`,"id":"`)
		s.skipStr()
		s.lit(`,"date":"`)
		s.skipStr()
	}
	s.lit(`,"conversation_id":"`)
	ev.ConversationID = s.str()
	s.lit(`,"event":{"type":"`)
	ev.Event.Type = s.str()
	skimmed := sk == skimSeqs || sk == skimTexts && ev.Event.Type != "append_text"
	if skimmed && !s.bad && bytes.HasSuffix(b, []byte(`}}}`)) {
		f.Event = ev
		return true
	}
	if !s.bad && bytes.HasPrefix(b[s.i:], []byte(`,"text":"`)) {
		s.lit(`,"text":"`)
		ev.Event.Text = s.str()
	}
	s.lit(`}}}`)
	if s.bad || s.i != len(b) {
		return false
	}
	f.Event = ev
	return true
}
