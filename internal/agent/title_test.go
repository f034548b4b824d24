package agent

import "testing"

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
