package server_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserModelPickerAndSettings: pick a model and set a system prompt
// and temperature before the first message; the fake of that provider
// receives them. Then switch the conversation to another provider's model
// and change its system prompt; the next answer uses them. The attach
// button follows the model's vision, and a reload shows the
// conversation's model.
func TestBrowserModelPickerAndSettings(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")

	const sel = `document.querySelector('[data-testid="model-select"]')`
	const attach = `document.querySelector('#composer .attach')`
	waitJS(t, tab, "model picker", sel+`.options.length === 3 && !`+sel+`.hidden && `+sel+`.value === 'a/alpha-1'`)
	waitJS(t, tab, "no attach without vision", attach+`.hidden`)

	// Pick b/beta (vision) for the new chat, and set its settings.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const s = `+sel+`; s.value = 'b/beta'; s.dispatchEvent(new Event('change')); })()`))
	waitJS(t, tab, "attach with vision", `!`+attach+`.hidden && localStorage.getItem('agentik.model') === 'b/beta'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="settings-btn"]').click()`))
	waitJS(t, tab, "settings dialog", `document.querySelector('[data-testid="settings-dialog"]').open`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector('[data-testid="system-prompt"]').value = 'Speak in haiku.';
		document.querySelector('[data-testid="param-temperature"]').value = '0.7';
		document.querySelector('[data-testid="settings-save"]').click();
	})()`))
	waitJS(t, tab, "settings dialog closed", `!document.querySelector('[data-testid="settings-dialog"]').open`)
	tp.B.Enqueue(llmtest.Reply{Text: "an old pond"})
	send(t, tab, "hello")
	waitJS(t, tab, "first answer", jsAnswers+`.length === 1`)
	reqs := tp.B.Requests()
	if len(reqs) != 1 {
		t.Fatalf("b received %d requests", len(reqs))
	}
	if r := reqs[0]; r.Model != "beta" || r.Messages[0].Content != "Speak in haiku." || r.Temperature == nil || *r.Temperature != 0.7 {
		t.Errorf("b received model %q, system %q, body %s", r.Model, r.Messages[0].Content, r.Body)
	}

	// Switch the conversation to a/alpha-2 and change its system prompt.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const s = `+sel+`; s.value = 'a/alpha-2'; s.dispatchEvent(new Event('change')); })()`))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="settings-btn"]').click()`))
	waitJS(t, tab, "settings dialog shows the conversation's", `document.querySelector('[data-testid="settings-dialog"]').open && document.querySelector('[data-testid="system-prompt"]').value === 'Speak in haiku.' && document.querySelector('[data-testid="param-temperature"]').value === '0.7'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => {
		document.querySelector('[data-testid="system-prompt"]').value = 'Now in prose.';
		document.querySelector('[data-testid="settings-save"]').click();
	})()`))
	waitJS(t, tab, "settings saved", `(document.getElementById('toasts')?.innerText || '').includes('Settings saved')`)
	tp.A.Enqueue(llmtest.Reply{Text: "prose it is"})
	send(t, tab, "again")
	waitJS(t, tab, "second answer", jsAnswers+`.length === 2`)
	reqs = tp.A.Requests()
	if len(reqs) != 1 {
		t.Fatalf("a received %d requests", len(reqs))
	}
	if r := reqs[0]; r.Model != "alpha-2" || r.Messages[0].Content != "Now in prose." || r.Temperature == nil || *r.Temperature != 0.7 {
		t.Errorf("a received model %q, system %q, body %s", r.Model, r.Messages[0].Content, r.Body)
	}

	// A reload shows the conversation's model; a new chat the last picked.
	id := conversationID(t, tab)
	openPage(t, ts, tab, "/c/"+id)
	waitJS(t, tab, "the conversation's model after reload", sel+`.value === 'a/alpha-2' && !`+attach+`.hidden`)
	var c agent.Conversation
	ts.call(t, "GET", "/agentik/conversations/"+id, "", 200, &c)
	if c.Model != "a/alpha-2" || c.SystemPrompt != "Now in prose." {
		t.Errorf("stored conversation %+v", c)
	}
}

// TestBrowserModelFollowsOtherTab: a model picked in one tab shows in
// another tab of the same conversation (the updated event).
func TestBrowserModelFollowsOtherTab(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"shared"}`, 201, &c)
	b := newBrowser(t, ts)
	one, two := b.tab(), b.tab()
	const sel = `document.querySelector('[data-testid="model-select"]')`
	for _, tab := range []context.Context{one, two} {
		openPage(t, ts, tab, "/c/"+c.ID)
		waitJS(t, tab, "model picker", sel+`.value === 'a/alpha-1'`)
	}
	do(t, one, chromedp.Evaluate[chromedp.Void](`(() => { const s = `+sel+`; s.value = 'b/beta'; s.dispatchEvent(new Event('change')); })()`))
	waitJS(t, two, "the other tab's picker", sel+`.value === 'b/beta' && !document.querySelector('#composer .attach').hidden`)
}

// TestBrowserSystemPromptPlaceholder: the chat settings' empty system
// prompt says, in full, which prompt it stands for: the server's on a new
// chat of the default agent, the picked agent's instructions, and those of
// an open conversation's agent.
func TestBrowserSystemPromptPlaceholder(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.call(t, "POST", "/agentik/agents", `{"slug":"pirate","name":"Pirate","instructions":"You are a pirate. Say arr."}`, 201, nil)
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"Ahoy","agent":"pirate"}`, 201, &c)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)

	const box = `document.querySelector('[data-testid="system-prompt"]')`
	placeholder := func(when, want string) {
		t.Helper()
		do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="settings-btn"]').click()`))
		waitJS(t, tab, "settings dialog "+when, `document.querySelector('[data-testid="settings-dialog"]').open`)
		if got := eval[string](t, tab, box+`.placeholder`); got != "Leave empty to use the default system prompt:\n\n"+want {
			t.Errorf("%s: the placeholder reads %q, want the default %q", when, got, want)
		}
		if got := eval[string](t, tab, box+`.value`); got != "" {
			t.Errorf("%s: the system prompt holds %q", when, got)
		}
		do(t, tab, press("Escape", 0))
		waitJS(t, tab, "dialog closed "+when, `!document.querySelector('[data-testid="settings-dialog"]').open`)
	}
	waitJS(t, tab, "the agents listed", `document.querySelectorAll('[data-testid="agent-option"]').length === 2`)
	placeholder("on a new chat", agent.DefaultSystemPrompt)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="agent-option"][data-slug="pirate"]').click()`))
	placeholder("with the pirate picked", "You are a pirate. Say arr.")
	openPage(t, ts, tab, "/c/"+c.ID)
	waitConnected(t, tab)
	waitJS(t, tab, "the agents loaded", `!document.querySelector('#agent-filter').hidden`)
	placeholder("in the pirate's conversation", "You are a pirate. Say arr.")
}
