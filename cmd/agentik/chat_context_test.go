package main

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

func TestChatPrintsCompaction(t *testing.T) {
	var b strings.Builder
	p := &turnPrinter{w: &b}
	p.print(&agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageUser, Content: []agent.Content{agent.Text("hi")}}})
	p.print(&agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageSummary, Summary: "s", Replaces: 12, TokensBefore: 7000, TokensAfter: 900}})
	want := "\n[context compacted: 12 earlier messages summarized, about 7000 → 900 tokens]\n"
	if got := b.String(); got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
