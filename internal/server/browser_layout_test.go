//go:build unix

package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserOneNavigation: every page is inside the app's layout, with
// the sidebar and its one navigation (Chats, Agents, Knowledge,
// Schedules, Memory, Inbox, Settings, and Admin for an admin), the page's
// own link marked current and its heading and title carrying the same
// name; a member is offered no Admin.
func TestBrowserOneNavigation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	const links = `[...document.querySelectorAll('#sidebar [data-testid="app-nav"] a')].map((a) => a.textContent.trim().split(/\s/)[0]).join(',')`
	for _, pg := range []struct{ path, name string }{
		{"/", "Chats"}, {"/agents", "Agents"}, {"/knowledge", "Knowledge"}, {"/schedules", "Schedules"},
		{"/memory", "Memory"}, {"/inbox", "Inbox"}, {"/settings", "Settings"}, {"/projects", "Chats"},
	} {
		openPage(t, ts, tab, pg.path)
		if got := eval[string](t, tab, links); got != "Chats,Agents,Knowledge,Schedules,Memory,Inbox,Settings,Admin" {
			t.Errorf("%s: the navigation is %q", pg.path, got)
		}
		if got := eval[string](t, tab, `document.querySelector('#sidebar [data-testid="app-nav"] a[aria-current="page"]')?.textContent.trim().split(/\s/)[0] || ''`); got != pg.name {
			t.Errorf("%s: the current link is %q, want %q", pg.path, got, pg.name)
		}
		if pg.path == "/" || pg.path == "/projects" {
			continue
		}
		if got := eval[string](t, tab, `document.querySelector('#main h1').textContent.trim() + ' | ' + document.title`); got != pg.name+" | "+pg.name+" · agentik" {
			t.Errorf("%s: heading and title %q, want one name %q", pg.path, got, pg.name)
		}
	}
	// /people, the settings page's old address, leads to it.
	openPage(t, ts, tab, "/people")
	if got := eval[string](t, tab, `location.pathname`); got != "/settings" {
		t.Errorf("/people ends on %s", got)
	}

	admin := ts.adminKey(t)
	_, member := ts.member(t, admin, "ann")
	if _, body, _ := ts.page(t, "/settings", "Authorization", "Bearer "+member); !strings.Contains(body, `data-testid="app-nav"`) || strings.Contains(body, `data-testid="nav-admin"`) {
		t.Errorf("a member's settings page: nav %v, admin link %v", strings.Contains(body, `data-testid="app-nav"`), strings.Contains(body, `data-testid="nav-admin"`))
	}
	if _, body, _ := ts.page(t, "/schedules", "Authorization", "Bearer "+admin); !strings.Contains(body, `data-testid="nav-admin"`) || !strings.Contains(body, `href="/admin"`) {
		t.Error("an admin's schedules page offers no Admin")
	}
}

// TestBrowserSavedPromptSlash: a prompt saved on the settings page is
// offered by / in the composer, inserted by Enter, and sent as typed.
func TestBrowserSavedPromptSlash(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/settings")
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.querySelector('[data-testid="saved-prompt-form"]');
		f.querySelector('[data-testid="saved-prompt-name"]').value = 'summary';
		f.querySelector('[data-testid="saved-prompt-text"]').value = 'Summarize this in three bullets.';
		f.querySelector('[data-testid="saved-prompt-save"]').click();
	})()`))
	waitJS(t, tab, "the saved prompt listed", `[...document.querySelectorAll('[data-testid="saved-prompt"]')].some((e) => e.textContent.includes('/summary'))`)

	openPage(t, ts, tab, "/")
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const p = document.querySelector('#prompt'); p.focus(); p.value = '/summ'; p.dispatchEvent(new Event('input')); })()`))
	waitJS(t, tab, "the saved prompt offered", `document.querySelector('[data-testid="saved-prompt-item"][data-name="summary"]')?.classList.contains('active') || document.querySelectorAll('[data-testid="saved-prompt-item"]').length === 1`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="saved-prompt-item"][data-name="summary"]').click()`))
	waitJS(t, tab, "the prompt inserted", `document.querySelector('#prompt').value === 'Summarize this in three bullets.'`)
	ts.Fake.Enqueue(llmtest.Reply{Text: "• one"})
	do(t, tab, press("Enter", 0))
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1`)
	reqs := ts.Fake.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "Summarize this in three bullets.") {
		t.Fatalf("the model was not sent the saved prompt")
	}
}

// TestBrowserThemePersists: the theme chosen on the settings page applies
// at once, after a reload, and in another browser (it is the user's, kept
// by the server).
func TestBrowserThemePersists(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	a := newBrowser(t, ts).tab()
	do(t, a, darkMode(false))
	openPage(t, ts, a, "/settings")
	const bg = `getComputedStyle(document.body).backgroundColor`
	light := eval[string](t, a, bg)
	do(t, a, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('[data-testid="pref-theme"]'); s.value = 'dark'; s.dispatchEvent(new Event('change', { bubbles: true })); })()`))
	waitJS(t, a, "dark at once", `document.documentElement.dataset.theme === 'dark' && !document.querySelector('[data-testid="preferences-saved"]').hidden`)
	dark := eval[string](t, a, bg)
	if dark == light {
		t.Fatalf("the page's background stayed %s", dark)
	}
	openPage(t, ts, a, "/")
	if got := eval[string](t, a, `document.documentElement.dataset.theme + ' ' + `+bg); got != "dark "+dark {
		t.Errorf("after a reload: %q, want dark %s", got, dark)
	}
	b := newBrowser(t, ts).tab()
	do(t, b, darkMode(false))
	openPage(t, ts, b, "/")
	if got := eval[string](t, b, `document.documentElement.dataset.theme + ' ' + `+bg); got != "dark "+dark {
		t.Errorf("another browser: %q, want dark %s", got, dark)
	}
	if got := eval[string](t, b, `document.querySelector('[data-testid="pref-theme"]')?.value || 'none'`); got != "none" {
		t.Errorf("the chat page has a theme field %q", got)
	}
}

// TestBrowserElicitationNeedsInput: a conversation whose tool asks a
// question is marked "Needs input" in the sidebar, live and after a
// reload, not "Needs approval".
func TestBrowserElicitationNeedsInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withEverything(t))
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Elicit"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "e1", Name: "everything__trigger-elicitation-request", Arguments: `{}`}}})
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+c.ID)
	send(t, tab, "ask me something")
	badge := `document.querySelector('.conv-item[data-id="` + c.ID + `"] [data-testid="waiting-badge"]')`
	waitJS(t, tab, "the row marked Needs input", badge+`?.checkVisibility() && `+badge+`.innerText.trim() === 'Needs input'`)
	openPage(t, ts, tab, "/")
	waitJS(t, tab, "Needs input after a reload", badge+`?.checkVisibility() && `+badge+`.innerText.trim() === 'Needs input'`)
}
