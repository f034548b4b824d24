package web

import (
	"strconv"

	"github.com/agentik/agentik/internal/agent"
)

// The context of the open conversation: the compaction divider and the
// gauge. assets/src/context.js renders the same labels for live updates.

// SummaryLabel is the divider of a compaction that replaced n entries,
// naming the span by the opening words of the first and the last question
// it summarized (single: they are one), e.g. `Summary of 6 earlier
// messages, from "Plan a trip to Lisbon" to "And the weather?"`. A
// summary written before spans were recorded names none.
func SummaryLabel(n int, first, last string, single bool) string {
	label := "Summary of " + strconv.Itoa(n) + " earlier messages"
	if n == 1 {
		label = "Summary of 1 earlier message"
	}
	switch {
	case first == "":
		return label
	case single || last == "":
		return label + `: "` + first + `"`
	}
	return label + `, from "` + first + `" to "` + last + `"`
}

// SingleSpan reports whether summary message m summarized one question.
func SingleSpan(m *agent.Message) bool {
	return m.FirstID == m.LastID && (m.FirstID != "" || m.FirstText == m.LastText)
}

// MessageSummaryLabel is SummaryLabel of summary message m.
func MessageSummaryLabel(m *agent.Message) string {
	return SummaryLabel(m.Replaces, m.FirstText, m.LastText, SingleSpan(m))
}

// ContextLabel is the gauge's text, e.g. "1.2k / 8.2k tokens".
func ContextLabel(c *agent.ContextSize) string {
	if c == nil {
		return ""
	}
	return shortTokens(c.Tokens) + " / " + shortTokens(c.Window) + " tokens"
}

// contextTitle is the gauge's tooltip.
func contextTitle(c *agent.ContextSize) string {
	if c == nil {
		return ""
	}
	return "Context: the conversation fills " + strconv.Itoa(c.Tokens) + " of the model's " + strconv.Itoa(c.Window) + " tokens; older messages are summarized when it fills up"
}

func contextValue(c *agent.ContextSize) string {
	if c == nil {
		return "0"
	}
	return strconv.Itoa(min(c.Tokens, c.Window))
}

func contextMax(c *agent.ContextSize) string {
	if c == nil {
		return "1"
	}
	return strconv.Itoa(max(c.Window, 1))
}

// contextHigh is where the gauge turns to a warning: 80% of the window.
func contextHigh(c *agent.ContextSize) string {
	if c == nil {
		return "1"
	}
	return strconv.Itoa(max(c.Window*4/5, 1))
}

func shortTokens(n int) string {
	if n < 1000 {
		return strconv.Itoa(n)
	}
	return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
}

func chatContext(p Page) *agent.ContextSize {
	if p.Chat == nil {
		return nil
	}
	return p.Chat.Context
}
