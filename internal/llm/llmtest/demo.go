package llmtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// DemoToolName is the tool the demo script calls when the request offers
// it: `agentik --demo` registers a built-in tool of that name that counts
// the words of a text.
const DemoToolName = "demo_word_count"

// DemoDelay is the pause between the demo's chunks, so its answers stream
// visibly.
const DemoDelay = 15 * time.Millisecond

// WithScript makes fn answer every chat request for which no reply is
// queued, instead of the directives of the package doc.
func WithScript(fn func(Request) Reply) Option {
	return func(s *Server) { s.script = fn }
}

// Demo is the script of `agentik --demo`: every turn shows what the UI
// renders. The first round streams reasoning, a line of text and a call of
// DemoToolName (when the request offers it) with the user's text; once the
// tool answered, it streams a Markdown answer with a list, a code block
// and a table that quotes the tool's result.
func Demo(req Request) Reply {
	lastUser := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			lastUser = i
		}
	}
	said := ""
	if lastUser >= 0 {
		said = strings.TrimSpace(req.Messages[lastUser].Content)
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Name == DemoToolName
	}
	result, called := "", false
	if lastUser >= 0 {
		result, called = toolResults(req.Messages[lastUser+1:])[DemoToolName]
	}
	if offered && !called {
		args, _ := json.Marshal(map[string]string{"text": said})
		return Reply{
			Reasoning: fmt.Sprintf("The user wrote %d words. This is the demo model, so I will show every part of the UI: "+
				"first this reasoning, then a call of the built-in %s tool, then an answer with a list, a code block and a table.",
				countWords(said), DemoToolName),
			Text:      "Let me count your words with the demo tool.",
			ToolCalls: []agent.ToolCall{{Name: DemoToolName, Arguments: string(args)}},
			Delay:     DemoDelay,
		}
	}
	if !called {
		result = fmt.Sprintf("%d words (counted without the tool)", countWords(said))
	}
	return Reply{Text: demoAnswer(result), Delay: DemoDelay}
}

// demoAnswer is the demo's final answer around the tool's result.
func demoAnswer(result string) string {
	return "**This is agentik's demo model**: the answers are scripted and no real model runs.\n\n" +
		"The demo tool says: *" + result + "*.\n\n" +
		"Things to try:\n\n" +
		"- send another message: every answer streams like this one;\n" +
		"- press **Stop** during an answer to interrupt it;\n" +
		"- reload the page: the conversation is stored, and a stream resumes where it was.\n\n" +
		"To use a real model, restart agentik without `--demo`:\n\n" +
		"```sh\n" +
		"OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=qwen3:8b go run ./cmd/agentik\n" +
		"```\n\n" +
		"| Part of a turn | How the UI shows it |\n" +
		"| --- | --- |\n" +
		"| reasoning | a collapsible thinking block |\n" +
		"| tool call | a card with the arguments and the result |\n" +
		"| answer | Markdown: lists, code, tables |\n"
}
