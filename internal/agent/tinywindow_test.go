package agent_test

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestTinyWindowLeavesToolsOut: a 300-token window answers the first turn
// of a conversation with memory on (the memory tools' specs alone are
// more than its room): the call goes without the tools. A message that
// cannot fit even so is refused with every part of the sum named.
func TestTinyWindowLeavesToolsOut(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, m llm.Config) { c.Windows = llm.NewWindows(m, 0) },
		llmtest.WithWindow(300), llmtest.WithListedWindow(300))
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: "hello"})
	noError(t, g.turn(c, "Hi, how are you today?"))
	reqs := g.fake.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 0 {
		t.Fatalf("%d requests, tools %v: want one, without the tools", len(reqs), reqs[0].Tools)
	}
	var msg string
	for _, e := range g.turn(g.create(false), strings.Repeat("a long message ", 80)) {
		if e.Type == agent.EventError {
			msg = e.Error
		}
	}
	for _, part := range []string{"context window (300 tokens)", "system prompt", "memory blocks", "this message", "room for the answer", "tools' definitions", "memory tools"} {
		if !strings.Contains(msg, part) {
			t.Errorf("refusal %q does not name %q", msg, part)
		}
	}
}
