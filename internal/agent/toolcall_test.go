package agent_test

import (
	"context"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// imageTools is fakeTools whose calls return an image too
// (agent.ContentTools, as tool.Manager's do).
type imageTools struct{ fakeTools }

var tinyPNG = agent.Content{Type: agent.ContentImage, Mime: "image/png", Data: "iVBORw0KGgo="}

func (f *imageTools) CallContent(ctx context.Context, name, args string) (agent.ToolOutput, error) {
	text, err := f.Call(ctx, name, args)
	return agent.ToolOutput{Text: text, Images: []agent.Content{tinyPNG}}, err
}

// TestToolImagesReachTheResult: the images of a tool's result reach the
// tool_result event and message through the tools as app.Wire wires them
// (agent.Config.ContentTools, inside the telemetry decorator, which passes
// them on), in a stored and a temp conversation.
func TestToolImagesReachTheResult(t *testing.T) {
	t.Parallel()
	g := newRig(t, &imageTools{})
	for _, temp := range []bool{false, true} {
		c := g.create(temp)
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{}`}}})
		g.fake.Enqueue(llmtest.Reply{Text: "a picture"})
		var got []agent.Content
		for _, e := range g.turn(c, "draw") {
			if e.Type == agent.EventToolResult {
				got = e.Images
			}
		}
		if len(got) != 1 || got[0].Data != tinyPNG.Data {
			t.Fatalf("temp %v: tool_result images %+v, want the tool's one", temp, got)
		}
		var stored []agent.Content
		for _, m := range g.history(c) {
			if m.Type == agent.MessageToolResult {
				stored = m.Images
			}
		}
		if len(stored) != 1 || stored[0].Data != tinyPNG.Data {
			t.Fatalf("temp %v: tool_result message images %+v, want the tool's one", temp, stored)
		}
	}
}
