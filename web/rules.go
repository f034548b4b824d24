package web

import (
	"slices"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// The UI's display rules live here, once: the templ components apply them
// on first paint, and the page hands them to the JS layer (Boot.Rules),
// which applies the same ones to live updates instead of keeping copies.

// Rules are the display rules the JS layer reads from the page.
type Rules struct {
	ImageTypes  []string          `json:"image_types"`  // shown inline and accepted as attachments
	ErrorTexts  map[string]string `json:"error_texts"`  // error code → what to show; "" is the fallback
	UsageFormat string            `json:"usage_format"` // token usage, {total}, {prompt} and {completion} comma-grouped
	Untitled    string            `json:"untitled"`     // what a conversation without a title is called
	PageFormat  string            `json:"page_format"`  // a citation's page, {page} (CitationPlace)
}

// usageFormat is how token usage reads (FormatUsage; the JS fills the
// same placeholders for a live turn's end.usage).
const usageFormat = "{total} tokens · {prompt} in · {completion} out"

// UIRules returns the display rules.
func UIRules() Rules {
	return Rules{ImageTypes: ImageTypes(), ErrorTexts: errorTexts(), UsageFormat: usageFormat, Untitled: Untitled, PageFormat: pageFormat}
}

// ImageTypes are the image types the UI shows inline as data: URLs and
// offers to attach: raster formats only (an SVG could carry script).
func ImageTypes() []string {
	return []string{"image/png", "image/jpeg", "image/gif", "image/webp"}
}

// inlineImage reports whether a mime type may be shown inline.
func inlineImage(mime string) bool { return slices.Contains(ImageTypes(), mime) }

// errorTexts are the texts shown for error messages whose code has one of
// its own, instead of the message; "" is shown when there is no message.
func errorTexts() map[string]string {
	return map[string]string{
		agent.CodeInterruptedByRestart: "The answer was interrupted by a server restart.",
		"":                             "Something went wrong.",
	}
}

// errorText is what an error message shows: the text of its code, or
// the summary line of its message (agent.ErrorSummary).
func errorText(m MessageView) string {
	texts := errorTexts()
	if t, ok := texts[m.Code]; ok && m.Code != "" {
		return t
	}
	summary, _ := agent.ErrorSummary(m.Error)
	if summary == "" {
		return texts[""]
	}
	return summary
}

// errorDetail is what an error message shows behind "Details": the
// lines of its message after the summary.
func errorDetail(m MessageView) string {
	_, detail := agent.ErrorSummary(m.Error)
	return detail
}

// CitationPlace is where in its file a cited passage is, as its chip
// says it after the file's name: " · p. 3", " · Heading", or "". The JS
// layer gets the words from Rules (page_format) for live answers.
func CitationPlace(c agent.Citation) string {
	switch {
	case c.Page > 0:
		return " · " + strings.ReplaceAll(pageFormat, "{page}", strconv.Itoa(c.Page))
	case c.Heading != "":
		return " · " + c.Heading
	}
	return ""
}

// pageFormat is how a citation names its page.
const pageFormat = "p. {page}"
