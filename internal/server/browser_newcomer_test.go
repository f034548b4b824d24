package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// Browser tests of what a newcomer expects from a chat UI (issue 23),
// written as a user sees the page: roles, names and visible text.

// jsBusy is the pending or streaming answer, marked for assistive technology.
const jsBusy = `document.querySelector('#thread [aria-busy="true"]')`

func TestBrowserPendingAnswerShowsAtOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	// Time Enter and the first busy answer in the page, where no test
	// round trip adds to it.
	eval[bool](t, tab, `(() => {
		window.__enter = 0; window.__busy = 0;
		document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !window.__enter) window.__enter = performance.now(); }, true);
		new MutationObserver(() => { if (!window.__busy && `+jsBusy+`) window.__busy = performance.now(); })
			.observe(document.body, { subtree: true, childList: true, attributes: true });
		return true;
	})()`)
	send(t, tab, "hello there [[wait=1.5s]]")
	waitJS(t, tab, "a pending answer", `window.__busy > 0`)
	if ms := eval[float64](t, tab, `window.__busy - window.__enter`); ms > 300 {
		t.Errorf("the pending answer showed %.0f ms after Enter, want within 300 ms", ms)
	}
	if got := eval[string](t, tab, jsBusy+`.textContent.trim()`); got != "" {
		t.Errorf("the pending answer already says %q: the model had not answered yet", got)
	}
	screenshot(t, tab, "pending-answer.png")
	// It turns into the answer.
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !`+jsBusy)
	if got := answerText(t, tab, 0); got != "You said: hello there" {
		t.Errorf("answer = %q", got)
	}
}

// jsButton finds a control as a user does: by its visible text or its
// accessible name (aria-label), among the visible ones.
func jsButton(name string) string {
	js, _ := json.Marshal(name)
	return `[...document.querySelectorAll('button, a, summary, [role="button"]')].find((b) => b.checkVisibility() && (b.innerText.trim() === ` + string(js) + ` || b.getAttribute('aria-label') === ` + string(js) + `))`
}

// click clicks the visible control called name, failing when there is none.
func click(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	waitJS(t, ctx, "a control called "+name, jsButton(name))
	do(t, ctx, chromedp.Evaluate[chromedp.Void](jsButton(name)+`.click()`))
}

func TestBrowserRetryFailedTurn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided"})
	send(t, tab, "hello again")
	alert := `document.querySelector('#thread [role="alert"]')`
	waitJS(t, tab, "the failed turn", alert+`?.dataset.id`)
	said := eval[string](t, tab, alert+`.innerText`)
	if !strings.Contains(said, "refused the API key") || !strings.Contains(said, "OPENAI_API_KEY") {
		t.Errorf("the error says %q, want in words that the key was refused and which setting to check", said)
	}
	if strings.Contains(said, "model:") || strings.Contains(said, "401") {
		t.Errorf("the error shows the raw detail at once: %q", said)
	}
	click(t, tab, "Details")
	waitJS(t, tab, "the detail", alert+`.innerText.includes('401 Unauthorized: Incorrect API key provided')`)
	screenshot(t, tab, "failed-turn.png")

	click(t, tab, "Retry")
	waitJS(t, tab, "the answer of the retried turn", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, tab, 0); got != "You said: hello again" {
		t.Errorf("answer after Retry = %q", got)
	}
	if eval[bool](t, tab, alert+` !== null`) {
		t.Error("the error still shows after a successful Retry")
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="user_message"]').length`); n != 1 {
		t.Errorf("%d questions after Retry, want the one asked again", n)
	}
}

func TestBrowserApprovalCardWaitsForYou(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "w1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "It is sunny."})
	send(t, tab, "weather?")
	card := `document.querySelector('.tool-card[data-call-id="w1"]')`
	waitJS(t, tab, "the card waiting", card+`?.innerText.includes('Waiting for your approval')`)
	if eval[bool](t, tab, card+`.innerText.includes('Running')`) {
		t.Errorf("a call waiting for approval says it runs: %q", eval[string](t, tab, card+`.innerText`))
	}
	// The arguments show once: in the editor of the decision.
	if n := eval[int](t, tab, `[...`+card+`.querySelectorAll('pre, textarea')].filter((e) => e.checkVisibility() && (e.value ?? e.textContent).includes('Oslo')).length`); n != 1 {
		t.Errorf("the arguments show %d times, want once", n)
	}
	screenshot(t, tab, "approval-waiting.png")
	click(t, tab, "Approve")
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := eval[string](t, tab, `document.activeElement?.labels?.[0]?.textContent ?? document.activeElement?.tagName`); got != "Message" {
		t.Errorf("after Approve the focus is on %q, want the message box", got)
	}
}

func TestBrowserContextGaugeCountsTheAnswer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=5]]")
	label := `document.querySelector('[data-testid=context-label]')`
	waitJS(t, tab, "the gauge after the first turn", label+`?.checkVisibility() && `+label+`.textContent.endsWith('/ 8.2k tokens')`)
	send(t, tab, "[[tokens=2500]]")
	// As the turn ends the gauge holds its 2,500-token answer, not only
	// the prompt that asked for it.
	waitJS(t, tab, "the gauge counting the answer", jsAnswers+`.length === 2 && /^2\.5k \//.test(`+label+`.textContent)`)
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "the page caught up", `document.querySelector('#main').dataset.caughtUp`)
	if got := eval[string](t, tab, label+`.textContent`); !strings.HasPrefix(got, "2.5k /") {
		t.Errorf("after a reload the gauge says %q, want the same 2.5k", got)
	}
}
