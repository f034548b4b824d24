package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// Browser tests of what a newcomer expects from a chat UI (issue 23),
// written as a user sees the page: roles, names and visible text.

// jsBusy is the pending or streaming answer, marked for assistive technology.
const jsBusy = `document.querySelector('#thread [aria-busy="true"]')`

func TestBrowserPendingAnswerShowsAtOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	do(t, tab, trackSockets())
	openPage(t, ts, tab, "/")
	// "At once" is an order, not a duration: the pending answer shows
	// before anything the server sends after Enter (the reply to the
	// create or the send, the echo of the question) reaches the page, so
	// a UI that waited for the server would fail however fast it is.
	eval[bool](t, tab, `(() => {
		window.__atEnter = -1; window.__busy = false; window.__busyFirst = false;
		document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && window.__atEnter < 0) window.__atEnter = window.__received; }, true);
		new MutationObserver(() => {
			if (!window.__busy && `+jsBusy+`) { window.__busy = true; window.__busyFirst = window.__received === window.__atEnter; }
		}).observe(document.body, { subtree: true, childList: true, attributes: true });
		return true;
	})()`)
	send(t, tab, "hello there [[wait=1.5s]]")
	waitJS(t, tab, "a pending answer", `window.__busy`)
	if !eval[bool](t, tab, `window.__busyFirst`) {
		t.Error("the pending answer showed only after the server's first message after Enter, want at once")
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
	// A retry replaces the failed try: no "1/2" branch to page through,
	// live or in the history a reload reads.
	branch := `[...document.querySelectorAll('#messages .branch-nav')].some(n => n.checkVisibility())`
	if eval[bool](t, tab, branch) {
		t.Errorf("Retry left a branch: %q", eval[string](t, tab, `document.querySelector('#messages .branch-nav').innerText`))
	}
	id := eval[string](t, tab, `location.pathname`)
	openPage(t, ts, tab, id)
	waitJS(t, tab, "the reloaded answer", jsAnswers+`.length === 1`)
	if eval[bool](t, tab, branch) {
		t.Errorf("after a reload, Retry left a branch: %q", eval[string](t, tab, `document.querySelector('#messages .branch-nav').innerText`))
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

func TestBrowserSignOut(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-secret"))
	tab := browserTab(t, ts)
	do(t, tab, chromedp.Navigate(ts.URL+"/"))
	waitJS(t, tab, "the sign-in page", `location.pathname === '/login'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { document.querySelector('input[type="password"]').value = 'k-secret'; document.querySelector('form').requestSubmit(); })()`))
	waitAfterSubmit(t, tab, "the chat", `location.pathname === '/'`)
	waitConnected(t, tab)
	screenshot(t, tab, "sign-out.png")
	click(t, tab, "Sign out")
	waitAfterSubmit(t, tab, "the sign-in page again", `location.pathname === '/login' && document.querySelector('input[type="password"]') !== null`)
	do(t, tab, chromedp.Navigate(ts.URL+"/"))
	waitAfterSubmit(t, tab, "the key asked for on a reload", `location.pathname === '/login' && document.querySelector('input[type="password"]') !== null`)
}

func TestBrowserNoSignOutWithoutKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	if eval[bool](t, tab, `!!(`+jsButton("Sign out")+`)`) {
		t.Error("Sign out is offered where there is nothing to sign out of")
	}
}

func TestBrowserExportNewChatAndEverything(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	if eval[bool](t, tab, `!!(`+jsButton("Export as Markdown")+`)`) {
		t.Error("a new chat with nothing in it offers Export")
	}
	send(t, tab, "export me")
	waitJS(t, tab, "the answer", jsAnswers+`.length === 1`)
	// Without a reload, the chat just started can be exported.
	waitJS(t, tab, "Export on the new chat", jsButton("Export as Markdown"))
	md := eval[string](t, tab, `fetch(`+jsButton("Export as Markdown")+`.href).then((r) => r.text())`)
	if !strings.Contains(md, "export me") || !strings.Contains(md, "You said: export me") {
		t.Errorf("the export of the new chat is %q", md)
	}
	all := eval[string](t, tab, `fetch(`+jsButton("Export all")+`.href).then((r) => r.text())`)
	if !strings.Contains(all, `"format":"agentik"`) || !strings.Contains(all, "export me") {
		t.Errorf("Export all gave %q", all)
	}
}

func TestBrowserSearchResultScrollsToTheMatch(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withPageMessages(40))
	var msgs []agent.Message
	for i := range 60 {
		q := fmt.Sprintf("Question %d about ordinary things", i)
		if i == 4 {
			q = "Question 4: how high does a zeppelin fly?"
		}
		msgs = append(msgs, agent.Message{Type: agent.MessageUser, Content: []agent.Content{agent.Text(q)}},
			agent.Message{Type: agent.MessageAssistant, Content: []agent.Content{agent.Text(fmt.Sprintf("Answer %d.\n\nA paragraph.\n\nAnother paragraph.", i))}})
	}
	if _, err := ts.Convs.Import(context.Background(), []agent.ImportConversation{{Source: "test:zeppelin", Title: "Long chat", Messages: msgs}}); err != nil {
		t.Fatal(err)
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector('input[type="search"]'); i.focus(); i.value = 'zeppelin'; i.dispatchEvent(new Event('input')); })()`))
	waitJS(t, tab, "the search result", `document.querySelector('#search-results a')`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#search-results a').click()`))
	match := `[...document.querySelectorAll('#messages .msg')].find((m) => m.innerText.includes('zeppelin'))`
	// The match is far above the latest message (before the page's 40):
	// it is loaded, scrolled into the middle of the view and highlighted.
	inView := `(() => { const m = ` + match + `; if (!m) return false; const r = m.getBoundingClientRect(), s = document.querySelector('#scroller').getBoundingClientRect(); return r.top >= s.top && r.bottom <= s.bottom; })()`
	waitJS(t, tab, "the match in view", match+`?.dataset.found === 'true' && `+inView)
	screenshot(t, tab, "search-match.png")
}

func TestBrowserBannersCanBeDismissed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withoutModel(), func(_ *agent.Config, s *server.Config) {
		s.ModelNotice = func() string { return "The endpoint answered 404 for the model list." }
	})
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	noModel := `[...document.querySelectorAll('[role="alert"]')].find((b) => b.innerText.includes('No model is configured'))`
	waitJS(t, tab, "the no-model banner", noModel+`?.checkVisibility()`)
	if got := eval[string](t, tab, noModel+`.innerText`); !strings.Contains(got, "agentik --demo") {
		t.Errorf("the no-model banner does not mention --demo: %q", got)
	}
	notice := `[...document.querySelectorAll('[role="status"]')].find((b) => b.innerText.includes('answered 404'))`
	screenshot(t, tab, "banners.png")
	do(t, tab, chromedp.Evaluate[chromedp.Void](noModel+`.querySelector('button[aria-label="Dismiss"]').click()`))
	waitJS(t, tab, "the banner gone", `!`+noModel+`?.checkVisibility()`)
	if !eval[bool](t, tab, notice+`?.checkVisibility() ?? false`) {
		t.Error("dismissing one banner hid the other")
	}
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if eval[bool](t, tab, noModel+`?.checkVisibility() ?? false`) {
		t.Error("a dismissed banner is back after a reload")
	}
}

func TestBrowserNotFoundPageHasNoScriptError(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	var mu sync.Mutex
	var thrown []string
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			mu.Lock()
			thrown = append(thrown, msg)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	do(t, tab, chromedp.Navigate(ts.URL+"/c/no-such-conversation"))
	waitJS(t, tab, "the page connected", `document.body.dataset.ready === 'true' && document.getElementById('connection')?.innerText.includes('Live')`)
	if got := eval[string](t, tab, `document.querySelector('h2')?.innerText`); got != "Conversation not found" {
		t.Errorf("heading = %q", got)
	}
	click(t, tab, "Start a new chat")
	waitJS(t, tab, "a new chat", `location.pathname === '/' && document.querySelector('#prompt')`)
	mu.Lock()
	defer mu.Unlock()
	if len(thrown) > 0 {
		t.Errorf("script errors: %v", thrown)
	}
}

func TestBrowserMathAndTaskLists(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: "Euler: $e^{i\\pi} = -1$.\n\n$$\\int_0^1 x\\,dx = \\frac{1}{2}$$\n\n- [x] proved\n- [ ] published"})
	send(t, tab, "math please")
	answer := jsAnswers + `[0]`
	check := func(when string) {
		t.Helper()
		waitJS(t, tab, "typeset math ("+when+")", answer+`?.querySelectorAll('.katex').length === 2`)
		// Typeset, not shown as written: MathML for assistive technology
		// carries the formula's source, and no dollar sign is left.
		if got := eval[string](t, tab, answer+`.querySelector('.katex annotation')?.textContent ?? ''`); got != `e^{i\pi} = -1` {
			t.Errorf("%s: inline math = %q", when, got)
		}
		if eval[bool](t, tab, answer+`.querySelector('.md').innerText.includes('$')`) {
			t.Errorf("%s: raw math delimiters are shown: %q", when, eval[string](t, tab, answer+`.innerText`))
		}
		if got := eval[string](t, tab, `getComputedStyle(`+answer+`.querySelector('.katex')).fontFamily`); !strings.Contains(got, "KaTeX") {
			t.Errorf("%s: math font = %q, want KaTeX's", when, got)
		}
		boxes := eval[[]bool](t, tab, `[...`+answer+`.querySelectorAll('input[type="checkbox"]')].map((b) => b.checked && b.disabled || (!b.checked && b.disabled ? false : null))`)
		if len(boxes) != 2 || !boxes[0] || boxes[1] {
			t.Errorf("%s: task-list boxes = %v, want a checked and an unchecked disabled box", when, boxes)
		}
	}
	check("live")
	screenshot(t, tab, "math.png")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	check("after reload")
	// Every byte came from this server: no CDN.
	if n := eval[int](t, tab, `performance.getEntriesByType('resource').filter((e) => !e.name.startsWith(location.origin)).length`); n != 0 {
		t.Errorf("%d resources from elsewhere", n)
	}
}

func TestBrowserOneRegeneratePerTurn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: "Let me check.", ToolCalls: []agent.ToolCall{{ID: "r1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Sunny in Oslo."})
	send(t, tab, "weather?")
	waitJS(t, tab, "the turn's two answers", jsAnswers+`.length === 2 && !document.querySelector('#live').children.length && document.querySelector('[data-testid="stop"]').hidden`)
	// The visible order of a turn's last meta row: the same live and reloaded.
	meta := `[...` + jsAnswers + `[1].querySelector('.msg-meta').querySelectorAll('.usage, button')].filter((e) => e.checkVisibility({ visibilityProperty: false })).map((e) => e.classList.contains('usage') ? 'usage' : (e.innerText.trim() || e.getAttribute('aria-label'))).join(' | ')`
	regenerates := `[...document.querySelectorAll('#thread button')].filter((b) => b.innerText.trim() === 'Regenerate').length`
	live := eval[string](t, tab, meta)
	if n := eval[int](t, tab, regenerates); n != 1 {
		t.Errorf("live: %d Regenerate buttons in one turn, want 1", n)
	}
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if n := eval[int](t, tab, regenerates); n != 1 {
		t.Errorf("reloaded: %d Regenerate buttons in one turn, want 1", n)
	}
	if got := eval[string](t, tab, meta); got != live {
		t.Errorf("the answer's meta row reads %q reloaded but %q live", got, live)
	}
}

func TestBrowserQueuedSendLooksSent(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=3000 delay=5ms]]")
	waitJS(t, tab, "streaming", jsStreaming+`?.textContent.includes('t5 ')`)
	send(t, tab, "next please")
	queued := `[...document.querySelectorAll('[data-testid="queued"]')].find((q) => q.innerText.includes('next please'))`
	waitJS(t, tab, "the queued send", queued)
	// Right-aligned like a sent message, its label right under it, and no
	// Edit that would do nothing.
	right := eval[float64](t, tab, `document.querySelector('#thread').getBoundingClientRect().right - `+queued+`.querySelector('.msg-body').getBoundingClientRect().right`)
	if right > 40 {
		t.Errorf("the queued bubble ends %.0f px left of the thread's right edge", right)
	}
	if eval[bool](t, tab, `[...`+queued+`.querySelectorAll('button')].some((b) => b.checkVisibility() && b.innerText.trim() === 'Edit')`) {
		t.Error("a queued message offers Edit")
	}
	screenshot(t, tab, "queued.png")
	do(t, tab, press("Escape", 0))
}

func TestBrowserSidebarNamesTheChatsModel(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"on beta","model":"b/beta"}`, 201, &c)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	footer := `document.querySelector('[data-testid="model"]').innerText`
	def := eval[string](t, tab, footer)
	click(t, tab, "on beta")
	waitJS(t, tab, "the footer naming the chat's model", footer+`.includes('b/beta')`)
	if strings.Contains(def, "b/beta") {
		t.Errorf("the new-chat page names %q, the other chat's model", def)
	}
}

func TestBrowserAnswerNamesItsModel(t *testing.T) {
	t.Parallel()
	tp := newTwoProviders(t)
	tp.Up.Store(true)
	tp.P.Check(t.Context())
	ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine), func(_ *agent.Config, s *server.Config) { s.ModelName = "a/alpha-1" })
	var c agent.Conversation
	ts.call(t, "POST", "/agentik/conversations", `{"title":"on beta","model":"b/beta"}`, 201, &c)
	sendIdle(t, ts, c.ID, "first")
	// The chat moves to another model: the answer before keeps its own.
	ts.call(t, "PATCH", "/agentik/conversations/"+c.ID, `{"model":"a/alpha-2"}`, 200, nil)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+c.ID)
	send(t, tab, "second")
	models := `[...` + jsAnswers + `].map((a) => a.querySelector('.msg-meta').innerText.includes('b/beta') ? 'b/beta' : a.querySelector('.msg-meta').innerText.includes('a/alpha-2') ? 'a/alpha-2' : '').join(' ')`
	waitJS(t, tab, "the second answer", jsAnswers+`.length === 2 && !document.querySelector('#live').children.length`)
	if got := eval[string](t, tab, models); got != "b/beta a/alpha-2" {
		t.Errorf("live: the answers name the models %q, want %q", got, "b/beta a/alpha-2")
	}
	screenshot(t, tab, "answer-model.png")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, models); got != "b/beta a/alpha-2" {
		t.Errorf("reloaded: the answers name the models %q, want %q", got, "b/beta a/alpha-2")
	}
	// A new chat's answer names the default model.
	openPage(t, ts, tab, "/")
	send(t, tab, "third")
	waitJS(t, tab, "the default model named", jsAnswers+`.length === 1 && `+jsAnswers+`[0].querySelector('.msg-meta').innerText.includes('a/alpha-1')`)
}

// Polish (21): the sign-in refusal reads as an error (the error colour,
// not the page's grey), the phone's search shows no "Ctrl K", and the
// model picker shows "(unavailable)" whole.
func TestBrowserPolish(t *testing.T) {
	t.Parallel()
	t.Run("login error", func(t *testing.T) {
		t.Parallel()
		ts := newTestServer(t, withKeys("k-secret"))
		tab := browserTab(t, ts)
		do(t, tab, chromedp.Navigate(ts.URL+"/login"))
		waitJS(t, tab, "the sign-in page", `document.querySelector('input[type="password"]')`)
		do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { document.querySelector('input[type="password"]').value = 'wrong'; document.querySelector('form').requestSubmit(); })()`))
		alert := `document.querySelector('[role="alert"]')`
		waitAfterSubmit(t, tab, "the refusal", alert+`?.innerText.includes('not valid')`)
		color := eval[string](t, tab, `getComputedStyle(`+alert+`).color`)
		plain := eval[string](t, tab, `getComputedStyle(document.querySelector('.login p:not([role="alert"])') ?? document.body).color`)
		if color == plain || color != "rgb(220, 38, 38)" {
			t.Errorf("the refusal is %s (the page's text is %s), want the error red rgb(220, 38, 38)", color, plain)
		}
		screenshot(t, tab, "login-error.png")
	})
	t.Run("phone search", func(t *testing.T) {
		t.Parallel()
		ts := newTestServer(t)
		tab := browserTab(t, ts)
		do(t, tab, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		openPage(t, ts, tab, "/")
		click(t, tab, "Open conversations")
		waitJS(t, tab, "the search box", `document.querySelector('input[type="search"]').checkVisibility()`)
		if eval[bool](t, tab, `document.querySelector('.sidebar').innerText.includes('Ctrl K')`) {
			t.Error(`the phone's search shows "Ctrl K"`)
		}
	})
	t.Run("model picker", func(t *testing.T) {
		t.Parallel()
		tp := newTwoProviders(t)
		tp.Up.Store(true)
		tp.P.Check(t.Context())
		ts := newTestServer(t, withProviders(tp, agent.TitlesFirstLine))
		var c agent.Conversation
		ts.call(t, "POST", "/agentik/conversations", `{"title":"on beta","model":"b/beta"}`, 201, &c)
		tp.Up.Store(false) // b goes down: its model is unavailable
		tp.P.Check(t.Context())
		tab := browserTab(t, ts)
		openPage(t, ts, tab, "/c/"+c.ID)
		sel := `document.querySelector('[data-testid="model-select"]')`
		waitJS(t, tab, "the picker on the unavailable model", sel+`?.selectedOptions[0]?.textContent === 'b/beta (unavailable)'`)
		// The closed picker is as wide as its text needs (plus its arrow).
		fits := eval[bool](t, tab, `(() => { const s = `+sel+`, c = document.createElement('canvas').getContext('2d'), st = getComputedStyle(s);
			c.font = st.fontSize + ' ' + st.fontFamily; return c.measureText(s.selectedOptions[0].textContent).width + 20 <= s.clientWidth; })()`)
		if !fits {
			t.Errorf("the picker (%d px) cuts %q short", eval[int](t, tab, sel+`.clientWidth`), "b/beta (unavailable)")
		}
		screenshot(t, tab, "model-unavailable.png")
	})
}
