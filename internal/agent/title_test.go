package agent

import (
	"strings"
	"testing"
)

func TestCleanModelTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Paris Trip Planning":                                "Paris Trip Planning",
		"  \"Quoted Title.\"  \nsecond line":                 "Quoted Title",
		"Title: **Go Retry Loops**":                          "Go Retry Loops",
		"<think>hmm, a title</think>\nDatabase Crash Safety": "Database Crash Safety",
		"one two three four five six seven eight nine ten":   "one two three four five six seven eight",
		"«Résumé du projet»":                                 "Résumé du projet",
		"":                                                   "",
		"\"\"":                                               "",
	} {
		if got := cleanModelTitle(in); got != want {
			t.Errorf("cleanModelTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAutoTitleOfAPaste: a long pasted first line is cut at a word with
// one "…", its spaces folded, never a second ellipsis after its own.
func TestAutoTitleOfAPaste(t *testing.T) {
	long := strings.Repeat("word ", 10) + "wait...   and\tthen a good deal more text that goes on"
	for _, tc := range []struct{ in, want string }{
		{"short title", "short title"},
		{"  first line  \nsecond", "first line"},
		{long, "word word word word word word word word word word wait…"},
		{strings.Repeat("wait… ", 20), strings.TrimSuffix(strings.Repeat("wait… ", 10), "… ") + "…"},
		{strings.Repeat("x", 70), strings.Repeat("x", 60) + "…"},
	} {
		got := autoTitle([]Content{Text(tc.in)})
		if got != tc.want {
			t.Errorf("autoTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "… …") || strings.Contains(got, "……") || strings.Contains(got, "...…") {
			t.Errorf("autoTitle(%q) = %q: two ellipses", tc.in, got)
		}
	}
}
