package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// stripControls removes terminal control sequences from model text before
// it reaches a terminal: a model must not set the window title, write the
// clipboard (OSC 52), move the cursor or recolour the screen. CSI, OSC,
// DCS, SOS, PM and APC sequences are removed whole when they are complete
// in s; any other ESC, C0 control but newline and tab, DEL and C1 control
// is dropped, so a sequence split across two chunks is left as harmless
// text.
func stripControls(s string) string {
	if !hasControl(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b && i+1 < len(s):
			if n := escapeLen(s[i:]); n > 0 {
				i += n
				continue
			}
			i += size
		case r == 0x9b || r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // C1 CSI, OSC, DCS, SOS, PM, APC
			if n := c1Len(s[i+size:], r); n >= 0 {
				i += size + n
				continue
			}
			i += size
		case isControl(r) || (r == utf8.RuneError && size == 1):
			i += size
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if isControl(r) {
			return true
		}
	}
	return false
}

// isControl: C0 but \n and \t, DEL, C1.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// escapeLen is the length of the escape sequence at the start of s (which
// starts with ESC), or 0 when it is not complete.
func escapeLen(s string) int {
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
		for j := 2; j < len(s); j++ {
			if c := s[j]; c >= 0x40 && c <= 0x7e {
				return j + 1
			} else if c < 0x20 || c > 0x7e {
				return 0
			}
		}
		return 0
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \)
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return 0
	default: // a two-byte escape (ESC c resets the terminal)
		if s[1] >= 0x20 && s[1] <= 0x7e {
			return 2
		}
		return 0
	}
}

// c1Len is the length of the body of a C1-introduced sequence after its
// introducer, or -1 when it is not complete.
func c1Len(s string, intro rune) int {
	if intro == 0x9b {
		for j := 0; j < len(s); j++ {
			if c := s[j]; c >= 0x40 && c <= 0x7e {
				return j + 1
			} else if c < 0x20 {
				return -1
			}
		}
		return -1
	}
	for j := 0; j < len(s); j++ {
		if s[j] == 0x07 {
			return j + 1
		}
		if r, n := utf8.DecodeRuneInString(s[j:]); r == 0x9c {
			return j + n
		}
	}
	return -1
}

// escapeControls rewrites control characters in a JSON line (a server
// should never send them raw, but tail prints what it got) as \u escapes,
// which are valid JSON inside a string and inert on a terminal.
func escapeControls(line []byte) []byte {
	s := string(line)
	if !hasControl(s) {
		return line
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r < 0x20 || (r >= 0x7f && r <= 0x9f)) || (r == utf8.RuneError && size == 1) {
			c := r
			if r == utf8.RuneError {
				c = rune(s[i])
			}
			fmt.Fprintf(&b, "\\u%04x", c)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return []byte(b.String())
}
