package web

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestSearchBoxAndExportLink: the sidebar has the search box search.js
// drives; a stored conversation's header links to its Markdown export, a
// temp one's does not (it is never stored, so it cannot be exported later).
func TestSearchBoxAndExportLink(t *testing.T) {
	p := basePage()
	doc := render(t, p)
	if doc.Find(`#sidebar input#conv-search[type=search]`).Length() != 1 || doc.Find(`#search-results[hidden]`).Length() != 1 {
		t.Error("no search box with hidden results in the sidebar")
	}
	// The link is on every page (the JS layer shows it on a chat it
	// creates), hidden where there is nothing to export.
	if doc.Find(`[data-testid=export]:not([hidden])`).Length() != 0 {
		t.Error("export link shown on the new-chat page")
	}
	conv := agent.Conversation{ID: "c 1", Title: "Maths"}
	p.Chat = NewChatView(conv, nil, 0)
	doc = render(t, p)
	if got := doc.Find(`[data-testid=export]`).AttrOr("href", ""); got != "/agentik/conversations/c%201/export?format=markdown" {
		t.Errorf("export href = %q", got)
	}
	conv.Temp = true
	p.Chat = NewChatView(conv, nil, 0)
	if render(t, p).Find(`[data-testid=export]:not([hidden])`).Length() != 0 {
		t.Error("export link shown on a temp conversation")
	}
}
