package main

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

func TestChatPrintsCompaction(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := &turnPrinter{w: &b}
	p.print(&agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageUser, Content: []agent.Content{agent.Text("hi")}}})
	p.print(&agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageSummary, Summary: "s", Replaces: 12, TokensBefore: 7000, TokensAfter: 900}})
	want := "\n[context compacted: Summary of 12 earlier messages; about 7000 → 900 tokens]\n"
	if got := b.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

// The span of a summary is named as the UI's divider names it.
func TestChatPrintsCompactionSpan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m    agent.Message
		want string
	}{
		{agent.Message{Replaces: 6, FirstID: "u1", FirstText: "Plan a trip", LastID: "u3", LastText: "And the weather?", TokensBefore: 5000, TokensAfter: 400},
			`[context compacted: Summary of 6 earlier messages, from "Plan a trip" to "And the weather?"; about 5000 → 400 tokens]`},
		{agent.Message{Replaces: 2, FirstID: "u1", FirstText: "Only one", LastID: "u1", LastText: "Only one", TokensBefore: 900, TokensAfter: 100},
			`[context compacted: Summary of 2 earlier messages: "Only one"; about 900 → 100 tokens]`},
	} {
		c.m.Type, c.m.Summary = agent.MessageSummary, "s"
		var b strings.Builder
		(&turnPrinter{w: &b}).print(&agent.Event{Type: agent.EventMessage, Message: &c.m})
		if got := strings.TrimSpace(b.String()); got != c.want {
			t.Errorf("printed %q, want %q", got, c.want)
		}
	}
}
