package llm

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decodeChunk decodes one streamed chunk. Nearly every chunk of an answer
// has one shape: one choice at index 0 whose delta holds a plain string of
// content or reasoning, no tool calls, no usage. Those are read by a small
// scanner, which gives exactly what encoding/json gives or declines
// (FuzzDecodeChunk holds it to that); everything else, and every chunk the
// scanner is unsure of, goes through json.Unmarshal. Decoding each chunk
// with encoding/json was the largest cost of a fast stream.
func decodeChunk(raw []byte, c *chunk) error {
	if fastChunk(raw, c) {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(raw, c)
}

// fastChunk fills c from raw when raw has the common shape, else reports
// false (c is then in any state).
func fastChunk(raw []byte, c *chunk) bool {
	s := scanner{b: raw}
	seen := 0
	ok := s.object(func(key string) bool {
		switch key {
		case "choices":
			if seen&1 != 0 {
				return false // a repeated known key: leave it to encoding/json
			}
			seen |= 1
			return s.choices(c)
		case "usage":
			if seen&2 != 0 {
				return false
			}
			seen |= 2
			return s.null() // usage comes once, at the end: the slow path
		}
		return !foldsTo(key, "choices", "usage") && s.skip()
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// foldsTo reports whether key matches one of names only case-insensitively
// (encoding/json would take it for that field; the scanner declines).
func foldsTo(key string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// scanner reads the subset of JSON fastChunk accepts; every method reports
// false on anything outside it.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c after whitespace.
func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads {"key": value, …}, calling field for each key with the
// scanner before its value; keys with escapes are declined.
func (s *scanner) object(field func(key string) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		key, ok := s.plain()
		if !ok || !s.byte(':') || !field(key) {
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

// plain reads a string without escapes, of valid UTF-8.
func (s *scanner) plain() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	j := bytes.IndexByte(s.b[s.i:], '"')
	if j < 0 {
		return "", false
	}
	v := s.b[s.i : s.i+j]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(v) {
		return "", false
	}
	s.i += j + 1
	return string(v), true
}

// null reads null.
func (s *scanner) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// text reads a looseString field's value: a plain string, or null.
func (s *scanner) text(dst *looseString) bool {
	if s.peek() == 'n' {
		*dst = ""
		return s.null()
	}
	v, ok := s.plain()
	*dst = looseString(v)
	return ok
}

// skip reads a value the chunk does not keep: a string (escapes allowed),
// a number, true, false or null. Objects and arrays are declined.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '"':
		s.i++
		for s.i < len(s.b) {
			c := s.b[s.i]
			switch {
			case c == '"':
				s.i++
				return true
			case c < 0x20:
				return false
			case c == '\\':
				if s.i+1 >= len(s.b) {
					return false
				}
				switch s.b[s.i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					s.i += 2
				case 'u':
					if s.i+6 > len(s.b) {
						return false
					}
					for _, h := range s.b[s.i+2 : s.i+6] {
						if !isHex(h) {
							return false
						}
					}
					s.i += 6
				default:
					return false
				}
			default:
				s.i++
			}
		}
		return false
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.null()
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) word(w string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// choices reads an array of no or one choice at index 0.
func (s *scanner) choices(c *chunk) bool {
	if !s.byte('[') {
		return false
	}
	c.Choices = []choiceChunk{}
	if s.byte(']') {
		return true
	}
	var ch choiceChunk
	seen := 0
	ok := s.object(func(key string) bool {
		var bit int
		var read func() bool
		switch key {
		case "index":
			bit, read = 1, func() bool { return s.word("0") && !s.digitNext() }
		case "delta":
			bit, read = 2, func() bool { return s.delta(&ch.Delta) }
		case "finish_reason":
			bit, read = 4, func() bool { return s.text(&ch.FinishReason) }
		default:
			return !foldsTo(key, "index", "delta", "finish_reason") && s.skip()
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		s.ws()
		return read()
	})
	if !ok || !s.byte(']') {
		return false // several choices, or not the shape
	}
	c.Choices = append(c.Choices, ch)
	return true
}

// digitNext reports whether a digit, '.', 'e' or 'E' follows (the "0" read
// was the start of another number).
func (s *scanner) digitNext() bool {
	if s.i >= len(s.b) {
		return false
	}
	c := s.b[s.i]
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E'
}

// delta reads a delta of plain-string content, reasoning_content and
// reasoning; tool calls are declined.
func (s *scanner) delta(d *deltaChunk) bool {
	seen := 0
	return s.object(func(key string) bool {
		var bit int
		var dst *looseString
		switch key {
		case "content":
			bit, dst = 1, &d.Content
		case "reasoning_content":
			bit, dst = 2, &d.ReasoningContent
		case "reasoning":
			bit, dst = 4, &d.Reasoning
		default:
			return !foldsTo(key, "content", "reasoning_content", "reasoning", "tool_calls") && s.skip()
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return s.text(dst)
	})
}
