package protocol

import "bytes"

// decodeSubscribe reads a subscribe frame of the shape clients send
// (json.Marshal's: compact, keys among op, id, stream, conversation_id,
// after and epoch, each once, strings of printable ASCII without escapes,
// after a plain non-negative integer) without reflection: every resume of
// a reconnect storm sends one, and encoding/json's four passes over it
// (Decode's head, id, op, then the command) were a tenth of the server's
// CPU per reconnect. ok is false for anything else, which Decode reads as
// before; what it accepts, Decode's general path reads the same
// (TestDecodeSubscribeMatchesJSON, FuzzDecodeCommand).
func decodeSubscribe(b []byte) (cmd Command, ok bool) {
	s := fastScan{b: b}
	if !s.lit('{') {
		return Command{}, false
	}
	var seen uint8
	for !s.lit('}') {
		if seen != 0 && !s.lit(',') {
			return Command{}, false
		}
		key, ok := s.raw()
		if !ok || !s.lit(':') {
			return Command{}, false
		}
		var bit uint8
		switch string(key) { // compared without a copy
		case "op":
			bit = 1
			cmd.Op, ok = s.str()
		case "id":
			bit = 2
			cmd.ID, ok = s.str()
		case "stream":
			bit = 4
			cmd.Stream, ok = s.str()
		case "conversation_id":
			bit = 8
			cmd.ConversationID, ok = s.str()
		case "epoch":
			bit = 16
			cmd.Epoch, ok = s.str()
		case "after":
			bit = 32
			var n int64
			n, ok = s.uint()
			cmd.After = &n
		default:
			return Command{}, false
		}
		if !ok || seen&bit != 0 {
			return Command{}, false
		}
		seen |= bit
	}
	if s.i != len(b) || cmd.Op != OpSubscribe || cmd.ID == "" || len(cmd.ID) > MaxRequestID {
		return Command{}, false
	}
	return cmd, true
}

// fastScan is decodeSubscribe's cursor.
type fastScan struct {
	b []byte
	i int
}

func (s *fastScan) lit(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes (what
// encoding/json reads as the same bytes).
func (s *fastScan) str() (string, bool) {
	b, ok := s.raw()
	return string(b), ok
}

// raw is str's bytes, in the frame.
func (s *fastScan) raw() ([]byte, bool) {
	if !s.lit('"') {
		return nil, false
	}
	rest := s.b[s.i:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, false
	}
	for _, c := range rest[:end] {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return nil, false
		}
	}
	s.i += end + 1
	return rest[:end], true
}

// uint reads a non-negative integer as JSON writes it (no leading zero, no
// fraction or exponent), of at most 18 digits.
func (s *fastScan) uint() (int64, bool) {
	start := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 18 {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	d := s.i - start
	if d == 0 || d > 1 && s.b[start] == '0' || s.i < len(s.b) && (s.b[s.i] >= '0' && s.b[s.i] <= '9' || s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	return n, true
}
