package server_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserAgentPickerAndEditor: on a new chat the picker lists the
// default agent; the editor makes a researcher with instructions, a tool
// chosen from the live tool list and a starter; the picker then selects
// it and shows the starter; the chat started from it runs on the agent
// (its instructions reach the model, its name is on the answer), and the
// sidebar filter hides it under another agent.
func TestBrowserAgentPickerAndEditor(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)

	const chips = `[...document.querySelectorAll('[data-testid="agent-option"]')]`
	waitJS(t, tab, "picker with the default agent", chips+`.map((b) => b.dataset.slug).join() === 'agentik' && `+chips+`[0].getAttribute('aria-pressed') === 'true'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="new-agent"]').click()`))
	const tools = `[...document.querySelectorAll('[data-testid="agent-tool"]')].map((c) => c.value)`
	waitJS(t, tab, "editor with the live tools", `document.querySelector('[data-testid="agent-editor"]')?.open && `+tools+`.includes('weather__forecast')`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => {
		const q = (id) => document.querySelector('[data-testid="' + id + '"]');
		q('agent-slug').value = 'researcher';
		q('agent-name').value = 'Researcher';
		q('agent-description').value = 'Looks things up';
		q('agent-instructions').value = 'You research.';
		q('agent-starters').value = 'Find the weather in Paris';
		[...document.querySelectorAll('[data-testid="agent-tool"]')].find((c) => c.value === 'weather__forecast').checked = true;
	})()`))
	screenshot(t, tab, "agent-editor.png")

	// A bad slug: the editor shows the server's error and stays open.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('[data-testid="agent-slug"]'); s.removeAttribute('pattern'); s.value = 'Not Safe'; document.querySelector('[data-testid="agent-save"]').click(); })()`))
	waitJS(t, tab, "error shown", `!document.querySelector('[data-testid="agent-error"]').hidden && document.querySelector('[data-testid="agent-error"]').textContent.includes('URL-safe')`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { document.querySelector('[data-testid="agent-slug"]').value = 'researcher'; document.querySelector('[data-testid="agent-save"]').click(); })()`))
	waitJS(t, tab, "researcher selected with its starter", `!document.querySelector('[data-testid="agent-editor"]') && `+
		chips+`.find((b) => b.dataset.slug === 'researcher')?.getAttribute('aria-pressed') === 'true' && document.querySelector('[data-testid="starter"]')?.dataset.prompt === 'Find the weather in Paris'`)
	screenshot(t, tab, "agent-picker.png")

	d, err := ts.Runner.Agent(t.Context(), "researcher")
	if err != nil || d.Instructions != "You research." || strings.Join(d.Tools, ",") != "weather__forecast" || d.Version != 1 {
		t.Fatalf("stored agent %+v, %v", d, err)
	}

	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="starter"]').click()`)) // a starter sends itself
	waitJS(t, tab, "answer with the agent's name", jsAnswers+`.length === 1 && `+jsAnswers+`[0].querySelector('[data-testid="msg-agent"]')?.textContent === 'Researcher'`)
	reqs := ts.Fake.Requests()
	if len(reqs) == 0 || reqs[0].Messages[0].Content != "You research." || len(reqs[0].Tools) != 4 || reqs[0].Tools[0].Name != "weather__forecast" || reqs[0].Tools[1].Name != agent.ToolMemoryAppend {
		t.Fatalf("model request %+v", reqs)
	}
	screenshot(t, tab, "agent-answer.png")

	// The sidebar filter: the researcher's chat shows under it, not under agentik.
	const item = `document.querySelector('[data-testid="conversation-item"][data-agent="researcher"]')`
	waitJS(t, tab, "filter shown", `!document.querySelector('[data-testid="agent-filter"]').hidden && `+item+` && !`+item+`.hidden`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('[data-testid="agent-filter"]'); f.value = 'agentik'; f.dispatchEvent(new Event('change')); })()`))
	waitJS(t, tab, "hidden under agentik", item+`.hidden`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('[data-testid="agent-filter"]'); f.value = 'researcher'; f.dispatchEvent(new Event('change')); })()`))
	waitJS(t, tab, "shown under researcher", `!`+item+`.hidden`)

	// A reload keeps the agent's name on the answer (server-rendered).
	openPage(t, ts, tab, eval[string](t, tab, `location.pathname`))
	waitJS(t, tab, "name after reload", jsAnswers+`[0]?.querySelector('[data-testid="msg-agent"]')?.textContent === 'Researcher'`)
}

// TestBrowserDelegationView: a writer delegates to a researcher; the tool
// card shows the researcher's text live (web.Delegation's markup, cloned)
// and a link that opens the researcher's own conversation.
func TestBrowserDelegationView(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := t.Context()
	str := func(s string) *string { return &s }
	if _, err := ts.Runner.CreateAgent(ctx, agent.AgentChange{Slug: str("researcher"), Name: str("Researcher")}); err != nil {
		t.Fatal(err)
	}
	tools := []string{"agent__researcher"}
	if _, err := ts.Runner.CreateAgent(ctx, agent.AgentChange{Slug: str("writer"), Name: str("Writer"), Tools: &tools}); err != nil {
		t.Fatal(err)
	}
	childGo := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "d1", Name: "agent__researcher", Arguments: `{"message":"find the answer"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "the answer is 42", Hold: childGo})
	ts.Fake.Enqueue(llmtest.Reply{Text: "The writer reports: 42"})
	conv, err := ts.Runner.Create(ctx, agent.NewConversation{Settings: agent.Settings{Agent: str("writer")}})
	if err != nil {
		t.Fatal(err)
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+conv.ID)
	waitConnected(t, tab)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const p = document.querySelector('#prompt'); p.value = 'write it up'; document.querySelector('[data-testid="send"]').click(); })()`))
	const link = `document.querySelector('[data-testid="tool-card"] [data-testid="delegate-link"]')`
	waitJS(t, tab, "the delegation's link", link+`?.textContent === "Open Researcher's conversation"`)
	close(childGo)
	waitJS(t, tab, "the researcher's text live, then the writer's answer",
		`document.querySelector('[data-testid="delegate-text"]')?.textContent === 'the answer is 42' && `+jsAnswers+`.length === 1 && `+jsAnswers+`[0].textContent.includes('The writer reports: 42')`)
	screenshot(t, tab, "delegation.png")
	href := eval[string](t, tab, link+`.getAttribute('href')`)
	if !strings.HasPrefix(href, "/c/") || href == "/c/"+conv.ID {
		t.Fatalf("the link goes to %q, want the researcher's conversation", href)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](link+`.click()`))
	waitJS(t, tab, "the researcher's conversation open", `location.pathname === '`+href+`' && `+jsAnswers+`[0]?.textContent.includes('the answer is 42')`)
	// It links back to the writer's, which started it.
	if got := eval[string](t, tab, `document.querySelector('[data-testid="parent-link"]')?.getAttribute('href') || 'none'`); got != "/c/"+conv.ID {
		t.Errorf("the researcher's conversation links back to %q, want /c/%s", got, conv.ID)
	}

	// The writer's page, loaded afresh, links the finished delegation by
	// the agent's name too.
	openPage(t, ts, tab, "/c/"+conv.ID)
	waitConnected(t, tab)
	waitJS(t, tab, "the link after a reload", link+`?.textContent === "Open Researcher's conversation" && `+link+`.getAttribute('href') === '`+href+`'`)
}

// TestBrowserAgentFromName: the agent editor makes "Travel Planner" from
// its name alone (the slug follows the name as it is typed); the slug's
// pattern compiles as Chromium's v-mode regular expression and refuses a
// bad slug; the agent's starter sends when clicked, on that agent; Delete
// asks once more, then deletes it.
func TestBrowserAgentFromName(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	const chips = `[...document.querySelectorAll('[data-testid="agent-option"]')]`
	waitJS(t, tab, "picker", chips+`.length === 1`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="new-agent"]').click()`))
	const q = `document.querySelector('[data-testid="agent-editor"]').querySelector`
	waitJS(t, tab, "editor", `document.querySelector('[data-testid="agent-editor"]')?.open`)
	if ok := eval[bool](t, tab, `(() => { try { new RegExp('^(?:' + `+q+`('[data-testid="agent-slug"]').pattern + ')$', 'v'); return true; } catch { return false; } })()`); !ok {
		t.Fatal("the slug's pattern does not compile as a v-mode regular expression")
	}
	do(t, tab, chromedp.SendKeys(`[data-testid="agent-name"]`, "Travel Planner"))
	waitJS(t, tab, "the slug from the name", q+`('[data-testid="agent-slug"]').value === 'travel-planner'`)
	if bad := eval[bool](t, tab, `(() => { const s = `+q+`('[data-testid="agent-slug"]'); const v = s.value; s.value = 'Not Safe'; const bad = s.validity.patternMismatch; s.value = v; return bad && s.validity.valid; })()`); !bad {
		t.Error("the slug input takes \"Not Safe\" (or refuses travel-planner)")
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { `+q+`('[data-testid="agent-starters"]').value = 'Plan a weekend in Lyon'; `+q+`('[data-testid="agent-save"]').click(); })()`))
	waitJS(t, tab, "Travel Planner selected", `!document.querySelector('[data-testid="agent-editor"]') && `+chips+`.find((b) => b.dataset.slug === 'travel-planner')?.getAttribute('aria-pressed') === 'true'`)
	d, err := ts.Runner.Agent(t.Context(), "travel-planner")
	if err != nil || d.Name != "Travel Planner" || strings.Join(d.Starters, "|") != "Plan a weekend in Lyon" {
		t.Fatalf("stored agent %+v, %v", d, err)
	}

	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="starter"]').click()`))
	waitJS(t, tab, "the starter's answer", jsAnswers+`.length === 1 && `+jsAnswers+`[0].querySelector('[data-testid="msg-agent"]')?.textContent === 'Travel Planner'`)
	if got := answerText(t, tab, 0); got != "You said: Plan a weekend in Lyon" {
		t.Fatalf("the starter's answer %q", got)
	}

	openPage(t, ts, tab, "/")
	waitJS(t, tab, "picker again", chips+`.length === 2`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](chips+`.find((b) => b.dataset.slug === 'travel-planner').click()`))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="edit-agent"]').click()`))
	waitJS(t, tab, "the editor with Delete", `document.querySelector('[data-testid="agent-editor"]')?.open && !`+q+`('[data-testid="agent-delete"]').hidden`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](q+`('[data-testid="agent-delete"]').click()`))
	waitJS(t, tab, "Delete asks again", q+`('[data-testid="agent-delete"]').textContent === 'Delete Travel Planner? Click again'`)
	if _, err := ts.Runner.Agent(t.Context(), "travel-planner"); err != nil {
		t.Fatalf("deleted at the first click: %v", err)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](q+`('[data-testid="agent-delete"]').click()`))
	waitJS(t, tab, "deleted", `!document.querySelector('[data-testid="agent-editor"]') && `+chips+`.length === 1`)
	if d, err := ts.Runner.Agent(t.Context(), "travel-planner"); err == nil && !d.Deleted {
		t.Fatalf("after Delete: %+v", d)
	}
}
