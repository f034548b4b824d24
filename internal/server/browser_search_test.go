package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// TestBrowserSearch: Ctrl-K focuses the search box; typing shows matching
// conversations with the words marked instead of the list; Enter opens the
// first; Escape brings the list back.
func TestBrowserSearch(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	res, err := ts.Convs.Import(ctx, []agent.ImportConversation{
		{Source: "test:1", Title: "Bicycle repair", Messages: []agent.Message{{Type: agent.MessageUser, Content: []agent.Content{agent.Text("my chain keeps slipping")}}}},
		{Source: "test:2", Title: "Apple pie", Messages: []agent.Message{{Type: agent.MessageUser, Content: []agent.Content{agent.Text("how much <b>cinnamon</b>?")}}}},
		{Source: "test:3", Messages: []agent.Message{{Type: agent.MessageUser, Content: []agent.Content{agent.Text("salted pretzel")}}}},
	})
	if err != nil || len(res.Conversations) != 3 {
		t.Fatalf("import: %+v %v", res, err)
	}
	pie := res.Conversations[1].ID
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)

	do(t, tab, press("k", 2)) // Ctrl
	waitJS(t, tab, "search focused", `document.activeElement?.id === 'conv-search'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const i = document.activeElement; i.value = 'cinnamon'; i.dispatchEvent(new Event('input')); })()`))
	waitJS(t, tab, "one result", `document.querySelectorAll('[data-testid="search-result"]').length === 1`)
	if got := eval[string](t, tab, `document.querySelector('#search-results').innerHTML`); !strings.Contains(got, `<mark>cinnamon</mark>`) || !strings.Contains(got, `&lt;b&gt;`) || strings.Contains(got, `<b>`) {
		t.Errorf("results = %s", got)
	}
	if eval[bool](t, tab, `getComputedStyle(document.querySelector('.conv-nav')).display !== 'none'`) {
		t.Error("the conversation list is shown beside the results")
	}
	do(t, tab, press("Enter", 0))
	waitJS(t, tab, "opened", `location.pathname === '/c/`+pie+`'`)
	waitJS(t, tab, "box cleared, list back", `document.querySelector('#conv-search').value === '' && getComputedStyle(document.querySelector('.conv-nav')).display !== 'none'`)

	do(t, tab, press("k", 2))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const i = document.activeElement; i.value = 'nothing-like-this'; i.dispatchEvent(new Event('input')); })()`))
	waitJS(t, tab, "no matches", `document.querySelector('#search-results').textContent.includes('No matches')`)

	// An untitled conversation is called the same in the results as in
	// the list (one word, web.Untitled, for both).
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const i = document.activeElement; i.value = 'pretzel'; i.dispatchEvent(new Event('input')); })()`))
	waitJS(t, tab, "the untitled result", `document.querySelectorAll('[data-testid="search-result"]').length === 1`)
	listed := eval[string](t, tab, `document.querySelector('[data-testid="conversation-item"][data-id="`+res.Conversations[2].ID+`"] .conv-title').textContent`)
	if got := eval[string](t, tab, `document.querySelector('[data-testid="search-result"] .search-title').textContent`); got != listed || got == "" {
		t.Errorf("the untitled conversation is %q in the results and %q in the list", got, listed)
	}
	do(t, tab, press("Escape", 0))
	waitJS(t, tab, "list back", `document.querySelector('#search-results').hidden && document.querySelector('#conv-search').value === ''`)
}
