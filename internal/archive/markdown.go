package archive

import (
	"fmt"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// Markdown renders a conversation for people: its title, then each message.
// The export route streams the same, MarkdownHead then MarkdownMessage page
// by page.
func Markdown(c agent.Conversation, ms []agent.Message) string {
	var b strings.Builder
	b.WriteString(MarkdownHead(c, len(ms)))
	for _, m := range ms {
		b.WriteString(MarkdownMessage(m))
	}
	return b.String()
}

// MarkdownHead is the start of a conversation of n messages in Markdown.
func MarkdownHead(c agent.Conversation, n int) string {
	title := c.Title
	if title == "" {
		title = "Untitled conversation"
	}
	return fmt.Sprintf("# %s\n\n_Created %s · %d messages · exported from agentik_\n", oneLine(title), agent.FormatTime(c.CreatedAt), n)
}

// MarkdownMessage renders one message for people, under a heading naming
// who wrote it and when. Tool calls and results are fenced code blocks;
// images are noted, not embedded.
func MarkdownMessage(m agent.Message) string {
	var b strings.Builder
	fence := func(s string) string {
		f := "```"
		for strings.Contains(s, f) {
			f += "`"
		}
		return f
	}
	when := agent.FormatTime(m.Date)
	switch m.Type {
	case agent.MessageUser, agent.MessageAssistant:
		who := "User"
		if m.Type == agent.MessageAssistant {
			who = "Assistant"
		}
		fmt.Fprintf(&b, "\n## %s · %s\n\n", who, when)
		for _, part := range m.Content {
			switch part.Type {
			case agent.ContentText:
				b.WriteString(part.Body)
				b.WriteString("\n")
			case agent.ContentImage:
				fmt.Fprintf(&b, "_[image: %s]_\n", part.Mime)
			}
		}
		if m.Interrupted {
			b.WriteString("\n_(interrupted)_\n")
		}
	case agent.MessageToolCall:
		f := fence(m.Arguments)
		fmt.Fprintf(&b, "\n## Tool call · %s · %s\n\n%sjson\n%s\n%s\n", oneLine(m.Name), when, f, m.Arguments, f)
	case agent.MessageToolResult:
		f := fence(m.Result)
		label := "Tool result"
		if m.IsError {
			label = "Tool error"
		}
		fmt.Fprintf(&b, "\n## %s · %s · %s\n\n%s\n%s\n%s\n", label, oneLine(m.Name), when, f, m.Result, f)
	case agent.MessageError:
		fmt.Fprintf(&b, "\n## Error · %s\n\n> %s (%s)\n", when, oneLine(m.Error), m.Code)
	}
	return b.String()
}

// oneLine keeps s on one Markdown line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
