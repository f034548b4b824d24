package main

import (
	"encoding/json"
	"testing"
)

func TestStripControls(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain text, ünïcode ✓ and \uFFFD\n\ttabbed", "plain text, ünïcode ✓ and \uFFFD\n\ttabbed"},
		{"title\x1b]0;pwned\x07 ok", "title ok"},
		{"clip\x1b]52;c;ZXZpbA==\x1b\\ ok", "clip ok"},
		{"\x1b[31mred\x1b[0m \x1b[2J\x1b[H", "red "},
		{"reset\x1bc!", "reset!"},
		{"dcs\x1bPq#0;2;0;0;0\x1b\\.", "dcs."},
		{"c1\u009b31mred \u009d0;t\u0007x", "c1red x"},
		{"split \x1b]52;c;ZX", "split ]52;c;ZX"}, // the rest of a split sequence is inert text
		{"bell\a back\b cr\r del\x7f nul\x00 bad\xff.", "bell back cr del nul bad."},
	}
	for _, tt := range tests {
		if got := stripControls(tt.in); got != tt.want {
			t.Errorf("stripControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEscapeControls(t *testing.T) {
	t.Parallel()
	line := []byte("{\"text\":\"a\x1b]0;x\x07b\u009bc\"}")
	got := escapeControls(line)
	var v struct{ Text string }
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if string(got) != `{"text":"a\u001b]0;x\u0007b\u009bc"}` || v.Text != "a\x1b]0;x\x07b\u009bc" {
		t.Errorf("escapeControls = %s (%q)", got, v.Text)
	}
	if clean := []byte(`{"a":"ok ✓"}`); string(escapeControls(clean)) != string(clean) {
		t.Errorf("a clean line changed")
	}
}
