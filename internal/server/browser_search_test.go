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

// TestBrowserSearchClearButton: the search field's × is a button called
// "Clear search" (Chromium's own × of a search input is no control a
// screen reader or a test can name), shown while the field holds a
// query; it empties the field, brings the whole list back and leaves the
// cursor in the field.
func TestBrowserSearchClearButton(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var imports []agent.ImportConversation
	for i, title := range []string{"Bicycle repair", "Apple pie", "Train tickets"} {
		imports = append(imports, agent.ImportConversation{Source: "test:" + title, Title: title, Messages: []agent.Message{{Type: agent.MessageUser, Content: []agent.Content{agent.Text([]string{"chain", "cinnamon", "platform"}[i])}}}})
	}
	if _, err := ts.Convs.Import(context.Background(), imports); err != nil {
		t.Fatal(err)
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)
	listed := `[...document.querySelectorAll('[data-testid="conversation-item"]')].filter((c) => c.checkVisibility()).length`
	waitJS(t, tab, "the three chats", listed+` === 3`)
	if eval[bool](t, tab, jsButton("Clear search")+` !== undefined`) {
		t.Error("a Clear search button shows while the field is empty")
	}

	do(t, tab, chromedp.SendKeys(`#conv-search`, "cinnamon"))
	waitJS(t, tab, "the list filtered to one result", `document.querySelectorAll('[data-testid="search-result"]').length === 1 && `+listed+` === 0`)
	if got := eval[string](t, tab, `document.querySelector('[data-testid="search-result"] .search-title').textContent`); got != "Apple pie" {
		t.Errorf("the result is %q, want Apple pie", got)
	}
	screenshot(t, tab, "search-clear.png")

	click(t, tab, "Clear search")
	waitJS(t, tab, "the field empty and the whole list back", `document.querySelector('#conv-search').value === '' && document.querySelector('#search-results').hidden && `+listed+` === 3`)
	if !eval[bool](t, tab, `document.activeElement?.id === 'conv-search'`) {
		t.Error("after Clear search the cursor is not in the search field")
	}
	if eval[bool](t, tab, jsButton("Clear search")+` !== undefined`) {
		t.Error("the Clear search button still shows with the field empty")
	}
}
