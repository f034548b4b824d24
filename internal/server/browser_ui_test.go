package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// Browser tests of the UI's behaviour (issue 10): scrolling, errors, the
// composer, the sidebar. They reuse the helpers of browser_test.go and
// assert positions and DOM contents, never timings.

// jsGap is how far the thread is scrolled from its bottom, in px, as the
// user sees it: measured once the next frame is painted (a DOM change and
// the scroll that follows it are one frame, but two tasks).
const jsGap = `new Promise((done) => requestAnimationFrame(() => setTimeout(() => {
	const s = document.querySelector('#scroller');
	done(s.scrollHeight - s.scrollTop - s.clientHeight);
})))`

// atBottom reports whether the thread is scrolled to its latest content.
func atBottom(t testing.TB, ctx context.Context) bool {
	t.Helper()
	return eval[float64](t, ctx, jsGap) < 2
}

// followLongAnswer sends a long answer and checks that the view follows it
// while it streams and stays at its end when it is stored.
func followLongAnswer(t *testing.T, ts *testServer, tab context.Context, when string) {
	t.Helper()
	before := eval[int](t, tab, jsAnswers+`.length`)
	send(t, tab, "[[tokens=2500 chunk=50 delay=5ms]]")
	// The answer outgrows the view while it streams.
	waitJS(t, tab, "an answer taller than the view", jsStreaming+`?.getBoundingClientRect().height > 2 * document.querySelector('#scroller').clientHeight`)
	if gap := eval[float64](t, tab, jsGap); gap > 2 {
		t.Errorf("%s: while streaming the view is %.0f px above the latest text", when, gap)
	}
	waitJS(t, tab, "persisted answer", fmt.Sprintf(jsAnswers+`.length === %d && !document.querySelector('#live').children.length`, before+1))
	if gap := eval[float64](t, tab, jsGap); gap > 2 {
		t.Errorf("%s: when the answer is stored the view jumps %.0f px away from its end", when, gap)
	}
}

func TestBrowserScrollFollowsStream(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	do(t, tab, chromedp.EmulateViewport(1000, 700))
	openPage(t, ts, tab, "/")
	followLongAnswer(t, ts, tab, "new chat")
	followLongAnswer(t, ts, tab, "existing conversation")
	id := conversationID(t, tab)
	openPage(t, ts, tab, "/c/"+id)
	followLongAnswer(t, ts, tab, "reopened conversation")
}

func TestBrowserScrollUpStopsFollowing(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	do(t, tab, chromedp.EmulateViewport(1000, 700))
	openPage(t, ts, tab, "/")
	jump := `document.querySelector('[data-testid="jump-latest"]')`
	if !eval[bool](t, tab, jump+`.hidden`) {
		t.Error("the jump button shows at the bottom of the thread")
	}
	send(t, tab, "[[tokens=20000 chunk=20 delay=4ms]]") // streams until stopped
	waitJS(t, tab, "an answer taller than the view", jsStreaming+`?.getBoundingClientRect().height > 2 * document.querySelector('#scroller').clientHeight`)

	// The user scrolls up to read: the view stays where they put it while
	// the answer grows below, and offers the way back.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__h = document.querySelector('#scroller').scrollHeight; document.querySelector('#scroller').scrollTop = 100`))
	waitJS(t, tab, "the answer grows below", `document.querySelector('#scroller').scrollHeight > window.__h + 500`)
	if top := eval[float64](t, tab, `document.querySelector('#scroller').scrollTop`); top != 100 {
		t.Errorf("after the user scrolled up, the view moved to %.0f (want it left at 100)", top)
	}
	waitJS(t, tab, "jump button", `!`+jump+`.hidden`)

	// Jump to latest: at the bottom, and following again.
	do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="jump-latest"]`)))
	if !atBottom(t, tab) {
		t.Error("Jump to latest did not reach the bottom")
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__h = document.querySelector('#scroller').scrollHeight`))
	waitJS(t, tab, "the answer grows", `document.querySelector('#scroller').scrollHeight > window.__h + 300`)
	if gap := eval[float64](t, tab, jsGap); gap > 2 {
		t.Errorf("after Jump to latest the view does not follow (%.0f px above the end)", gap)
	}
	if !eval[bool](t, tab, jump+`.hidden`) {
		t.Error("the jump button stays after jumping")
	}

	// Scrolled up when the answer is stored (stopped here, so the test
	// does not wait for 20000 tokens): the view does not move.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#scroller').scrollTop = 400`))
	do(t, tab, press("Escape", 0))
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if top := eval[float64](t, tab, `document.querySelector('#scroller').scrollTop`); top != 400 {
		t.Errorf("when the answer was stored the view moved from 400 to %.0f", top)
	}
}

func TestBrowserErrorShownOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	send(t, tab, "[[error=500]]")
	conversationID(t, tab)
	waitJS(t, tab, "error shown", `document.querySelector('[data-testid="error-message"]') !== null`)
	waitJS(t, tab, "turn ended", `document.querySelector('#main').dataset.running === 'false'`)
	count := func(when string) {
		t.Helper()
		n := eval[int](t, tab, `new Promise((done) => requestAnimationFrame(() => setTimeout(() => done(document.querySelectorAll('#thread [data-testid="error-message"]').length))))`)
		if n != 1 {
			t.Errorf("%s: the error is shown %d times, want once: %s", when, n, eval[string](t, tab, `document.querySelector('#thread').innerText`))
		}
	}
	count("live")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	count("after reload")
}

func TestBrowserUserLineBreaksKept(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	// Type a line, Shift+Enter, another line, Enter.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const p = document.querySelector('#prompt'); p.focus(); p.value = 'first line'; p.setSelectionRange(p.value.length, p.value.length); })()`))
	do(t, tab, press("Enter", 8))
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const p = document.querySelector('#prompt'); p.value += 'second *line*'; })()`))
	do(t, tab, press("Enter", 0))
	conversationID(t, tab)
	waitJS(t, tab, "answer", jsAnswers+`.length === 1`)
	check := func(when string) {
		t.Helper()
		got := eval[string](t, tab, `document.querySelector('#messages [data-type="user_message"] [data-testid="user-text"]')?.innerText ?? ''`)
		if got != "first line\nsecond *line*" {
			t.Errorf("%s: the user bubble shows %q, want the two lines as typed", when, got)
		}
	}
	check("live")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	check("after reload")
}

// overlaps is a JS expression: do the boxes of selectors a and b overlap?
func overlaps(a, b string) string {
	return fmt.Sprintf(`(() => { const x = document.querySelector(%q).getBoundingClientRect(), y = document.querySelector(%q).getBoundingClientRect();
		return x.left < y.right && y.left < x.right && x.top < y.bottom && y.top < x.bottom; })()`, a, b)
}

func TestBrowserNoModelSendLeavesNoChat(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withoutModel())
	for _, size := range []struct {
		name string
		act  chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1280, 860)},
		{"phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
	} {
		tab := browserTab(t, ts)
		do(t, tab, size.act)
		openPage(t, ts, tab, "/")
		send(t, tab, "hello there")
		waitJS(t, tab, "error toast", `document.querySelector('[data-testid="toast"].toast-error') !== null`)
		if eval[bool](t, tab, overlaps(`[data-testid="toast"]`, `#composer`)) {
			t.Errorf("%s: the error toast covers the composer", size.name)
		}
		if got := eval[string](t, tab, `location.pathname`); got != "/" {
			t.Errorf("%s: after a failed first send the page is %s, want /", size.name, got)
		}
		if got := eval[string](t, tab, `document.querySelector('#prompt').value`); got != "hello there" {
			t.Errorf("%s: the prompt holds %q, want the unsent text back", size.name, got)
		}
		// The refused chat is deleted, and its deleted event reaches the
		// sidebar a moment after the toast: wait for the list to empty.
		waitJS(t, tab, size.name+": no conversation in the sidebar after a failed send",
			`document.querySelectorAll('[data-testid="conversation-item"]').length === 0`)
		if eval[bool](t, tab, `document.querySelector('[data-testid="empty-state"]')?.hidden ?? true`) {
			t.Errorf("%s: the empty state is gone after a failed send", size.name)
		}
		waitStoreEmpty(t, ts)
		// Nothing was made to be deleted: the first send creates the chat
		// with its message in one request (create_conversation with
		// content), refused whole.
		if evs, err := ts.Store.EncodedEvents(context.Background(), agent.EventQuery{Limit: 10}); err != nil || len(evs) != 0 {
			t.Errorf("%s: a refused first send wrote %d events (%v), want none", size.name, len(evs), err)
		}
		screenshot(t, tab, "no-model-"+size.name+".png")
	}
}

// waitStoreEmpty waits until the store holds no conversation.
func waitStoreEmpty(t *testing.T, ts *testServer) {
	t.Helper()
	waitFor(t, "no conversation left in the store by a failed first send", func() bool {
		cs, _, err := ts.Convs.List(context.Background(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs) == 0
	})
}

func TestBrowserSidebarPagesPastFirstPage(t *testing.T) {
	t.Parallel()
	requireChromium(t) // before seeding
	ts := newTestServer(t)
	ctx := context.Background()
	const n = 230
	for i := range n {
		if _, err := ts.Runner.Create(ctx, agent.NewConversation{Title: fmt.Sprintf("Chat number %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	items := `document.querySelectorAll('[data-testid="conversation-item"]')`
	if got := eval[int](t, tab, items+`.length`); got != 200 {
		t.Errorf("first paint lists %d conversations, want the 200 most recent", got)
	}
	// Scrolling to the end of the list pages in the older ones.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const nav = document.querySelector('.conv-nav'); nav.scrollTop = nav.scrollHeight; })()`))
	waitJS(t, tab, "every conversation listed", items+`.length === `+fmt.Sprint(n))
	if got := eval[int](t, tab, `new Set([...`+items+`].map((li) => li.dataset.id)).size`); got != n {
		t.Errorf("the sidebar lists %d distinct conversations, want %d", got, n)
	}
	if got := eval[string](t, tab, items+`[`+fmt.Sprint(n-1)+`].querySelector('.conv-title').textContent`); got != "Chat number 0" {
		t.Errorf("the last item is %q, want the oldest conversation", got)
	}
	if !eval[bool](t, tab, `document.querySelector('[data-testid="more-conversations"]').hidden`) {
		t.Error("Show more stays after everything is listed")
	}
}

// TestBrowserEnterWhileRunningQueues: a message sent while the answer
// streams is queued (not refused), and runs once Esc has stopped the turn.
func TestBrowserEnterWhileRunningQueues(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=2000 delay=10ms]]")
	waitJS(t, tab, "streamed text", jsStreaming+`?.textContent.includes('t5 ')`)
	send(t, tab, "a follow-up")
	waitJS(t, tab, "the follow-up queued", `[...document.querySelectorAll('[data-testid="queued"]')].some((q) => q.textContent.includes('a follow-up'))`)
	if got := eval[string](t, tab, `document.querySelector('#prompt').value`); got != "" {
		t.Errorf("the prompt holds %q, want it sent", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="user_message"]').length`); n != 1 {
		t.Errorf("%d user messages while the follow-up waits, want 1", n)
	}
	do(t, tab, press("Escape", 0))
	waitJS(t, tab, "the follow-up runs after the stop", `document.querySelectorAll('#messages [data-type="user_message"]').length === 2 && document.querySelectorAll('[data-testid="queued"]').length === 0`)
}

func TestBrowserFocusOnLoad(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	if got := eval[string](t, tab, `document.activeElement?.id ?? ''`); got != "prompt" {
		t.Errorf("on load the focus is on %q, want the message box", got)
	}
}

// jsContrast is a JS function: the WCAG contrast ratio of an element's
// text against the first opaque background behind it.
const jsContrast = `((el) => {
	const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
	const lum = ([r, g, b]) => { const f = (x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
	let bg = null;
	for (let e = el; e && !bg; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || (c.length === 4 && c[3] === 1)) bg = c.slice(0, 3); }
	bg = bg || rgb(getComputedStyle(document.documentElement).backgroundColor).slice(0, 3);
	const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg);
	return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
})`

func TestBrowserMutedTextContrast(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	id := richConversation(t, ts)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+id)
	for _, dark := range []bool{false, true} {
		do(t, tab, darkMode(dark))
		for _, sel := range []string{".hint", ".section-label", ".usage", ".tools-count", ".code-bar", ".tool-label"} {
			if got := eval[float64](t, tab, `(() => { const el = document.querySelector('`+sel+`'); return el ? `+jsContrast+`(el) : -1; })()`); got < 4.5 {
				t.Errorf("dark=%v: %s has contrast %.2f:1, want ≥ 4.5:1", dark, sel, got)
			}
		}
	}
}

func TestBrowserPhoneTableScrolls(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	do(t, tab, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: "| Configuration | Throughput | Latency | Availability | Recommendation |\n|---|---|---|---|---|\n" +
		"| Single-instance | Moderate | Predictable | Unremarkable | Straightforward |\n| Replicated | Considerable | Unpredictable | Exceptional | Recommended |\n"})
	send(t, tab, "a wide table")
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	// Every one-word cell is on one line: no word is broken.
	broken := eval[[]string](t, tab, `[...document.querySelectorAll('#messages .md td, #messages .md th')].filter((c) => {
		const r = document.createRange(); r.selectNodeContents(c); return r.getClientRects().length > 1;
	}).map((c) => c.textContent)`)
	if len(broken) > 0 {
		t.Errorf("table cells broken across lines: %v", broken)
	}
	if !eval[bool](t, tab, `(() => { const w = document.querySelector('#messages .table-wrap'); return w.scrollWidth > w.clientWidth; })()`) {
		t.Error("the wide table does not scroll sideways")
	}
	noOverflow(t, tab, "phone, wide table")
}

// TestBrowserMathKeptIntact: math reaches the typesetter exactly as
// written (markdown eats no backslash and reads no a_1 * b_1 as
// emphasis), and dollar amounts stay text.
func TestBrowserMathKeptIntact(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	maths := []string{`$e^{i\pi} + 1 = 0$`, `$a_1 * b_1 * c_1$`, `\(x_i^2\)`, `\[ \sum_{k=1}^n k = \frac{n(n+1)}{2} \]`, "$$\n\\int_0^1 x^2 \\, dx = \\tfrac{1}{3}\n$$"}
	ts.Fake.Enqueue(llmtest.Reply{Text: "Euler: " + maths[0] + " and " + maths[1] + ", also " + maths[2] + ".\n\nThe sum:\n\n" + maths[3] + "\n\nAnd:\n\n" + maths[4] + "\n\nCosts $5 and $10 stay *prices*."})
	send(t, tab, "some maths")
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	tex := []string{`e^{i\pi} + 1 = 0`, `a_1 * b_1 * c_1`, `x_i^2`, `\sum_{k=1}^n k = \frac{n(n+1)}{2}`, `\int_0^1 x^2 \, dx = \tfrac{1}{3}`}
	check := func(when string) {
		t.Helper()
		waitJS(t, tab, "typeset math", jsAnswers+`[0].querySelectorAll('.katex').length === 5`)
		got := eval[[]string](t, tab, `[...`+jsAnswers+`[0].querySelectorAll('.katex annotation')].map((a) => a.textContent.trim())`)
		for i, m := range tex {
			if i >= len(got) || got[i] != m {
				t.Errorf("%s: math %d reached the typesetter as %q, want %q (written %q)", when, i, got, m, maths[i])
			}
		}
		if txt := eval[string](t, tab, jsAnswers+`[0].querySelector('.md').textContent`); !strings.Contains(txt, "Costs $5 and $10 stay prices.") {
			t.Errorf("%s: dollar amounts are not text: %q", when, txt)
		}
		if !eval[bool](t, tab, jsAnswers+`[0].querySelector('.md em')?.textContent === 'prices'`) {
			t.Errorf("%s: markdown next to dollar amounts is not rendered", when)
		}
	}
	check("live")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "rendered history", `document.querySelector('#main').dataset.rendered === 'true'`)
	check("after reload")
}

// failingSockets makes every WebSocket of the tab's pages close as soon as
// it opens, unseen by the page, while window.__down is true, so the server
// looks unreachable. (Connections are made and dropped rather than refused:
// Chromium delays new connections to a host after refused ones.)
func failingSockets() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			(() => {
				const Native = window.WebSocket;
				window.__sockets = [];
				window.WebSocket = class extends Native {
					constructor(...args) {
						super(...args);
						window.__sockets.push(this);
						this.addEventListener('open', (e) => { if (window.__down) { e.stopImmediatePropagation(); this.close(); } });
					}
				};
			})();`})
		return err
	})
}

func TestBrowserUnreachableServerShows(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	for _, phone := range []bool{false, true} {
		tab := browserTab(t, ts)
		if phone {
			do(t, tab, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		}
		do(t, tab, failingSockets())
		openPage(t, ts, tab, "/")
		dot := `getComputedStyle(document.querySelector('.tools-dot')).backgroundColor`
		online := eval[string](t, tab, dot)
		do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__down = true; window.__sockets.forEach((s) => s.close())`))
		waitJS(t, tab, "reconnecting", `document.getElementById('connection').dataset.state !== 'online'`)
		if got := eval[string](t, tab, dot); got == online {
			t.Errorf("phone=%v: the Tools dot keeps its online colour %s while the server is unreachable", phone, got)
		}
		label := `document.querySelector('#connection .conn-label')`
		if !eval[bool](t, tab, label+`.getBoundingClientRect().width > 0 && `+label+`.textContent.startsWith('Reconnecting')`) {
			t.Errorf("phone=%v: 'Reconnecting…' is not shown", phone)
		}
		if got := eval[float64](t, tab, `parseFloat(getComputedStyle(`+label+`).fontWeight)`); got < 600 {
			t.Errorf("phone=%v: 'Reconnecting…' is not emphasised (font weight %v)", phone, got)
		}
		screenshot(t, tab, fmt.Sprintf("reconnecting-phone-%v.png", phone))
		// The browser reports the network back on each poll, so the page
		// reconnects at once instead of after its backoff.
		do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__down = false`))
		waitJS(t, tab, "back online", `(dispatchEvent(new Event('online')), document.getElementById('connection').dataset.state === 'online')`)
		if got := eval[string](t, tab, dot); got != online {
			t.Errorf("phone=%v: back online the Tools dot is %s, want %s", phone, got, online)
		}
	}
}

// frameTap makes every page of the tab record the ops it sends
// (window.__sent) and the subscriptions it gets events on (window.__subs),
// drop incoming event frames while window.__mute is true (the other frames
// of a packed message still arrive), and lets a test
// deliver a frame of its own with window.__inject(frame).
func frameTap() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			(() => {
				const Native = window.WebSocket;
				window.__sent = []; window.__subs = {}; window.__ws = null;
				window.WebSocket = class extends Native {
					constructor(...args) {
						super(...args);
						window.__ws = this;
						this.addEventListener('message', (e) => {
							// A packed message holds several frames, one per line.
							const lines = String(e.data).split('\n');
							const frames = lines.map((l) => JSON.parse(l));
							for (const f of frames) {
								if (f.type === 'event' && f.event?.type === 'conversation') window.__subs[f.event.conversation_id] = f.sub;
							}
							if (!window.__mute || !frames.some((f) => f.type === 'event')) return;
							e.stopImmediatePropagation();
							const rest = lines.filter((l, i) => frames[i].type !== 'event');
							if (rest.length) this.dispatchEvent(new MessageEvent('message', { data: rest.join('\n') }));
						});
					}
					send(data) { window.__sent.push(JSON.parse(data)); super.send(data); }
				};
				window.__inject = (f) => window.__ws.dispatchEvent(new MessageEvent('message', { data: JSON.stringify(f) }));
			})();`})
		return err
	})
}

func TestBrowserResyncPagesHistory(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Missed a lot"})
	if err != nil {
		t.Fatal(err)
	}
	sendIdle(t, ts, c.ID, "[[tokens=1]] first")
	tab := browserTab(t, ts)
	do(t, tab, frameTap())
	openPage(t, ts, tab, "/c/"+c.ID)
	sendIdle(t, ts, c.ID, "[[tokens=1]] seen live") // learn the subscription id
	waitJS(t, tab, "live answer", jsAnswers+`.length === 2`)
	sub := eval[string](t, tab, `window.__subs['`+c.ID+`']`)
	if u := eval[string](t, tab, `window.__ws.url`); !strings.HasSuffix(u, "/agentik/ws?pack=1") {
		t.Errorf("the page's socket is %s: it does not ask for packed messages", u)
	}

	// The tab misses 260 messages, then the server says it must resync.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__mute = true`))
	const turns = 130
	seedTurns(t, ts, c.ID, 0, turns)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__mute = false; window.__sent.length = 0; window.__inject({type: 'resync', sub: '`+sub+`', reason: 'pruned'})`))
	waitJS(t, tab, "missed messages shown", fmt.Sprintf(jsAnswers+`.length === %d`, turns+2))
	if n := eval[int](t, tab, `document.querySelectorAll('#messages [data-type="user_message"]').length`); n != turns+2 {
		t.Errorf("%d user messages, want %d", n, turns+2)
	}
	limits := eval[[]int](t, tab, `window.__sent.filter((f) => f.op === 'get_messages').map((f) => f.limit)`)
	if len(limits) < 2 {
		t.Errorf("resync fetched the missed history in %d request(s) %v, want pages", len(limits), limits)
	}
	for _, l := range limits {
		if l > 200 {
			t.Errorf("resync asked for %d messages in one request, want pages of at most 200", l)
		}
	}
}

func TestBrowserUsageReadsTheSameLiveAndReloaded(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	send(t, tab, "[[tokens=1500]]")
	conversationID(t, tab)
	waitJS(t, tab, "usage of the turn", jsAnswers+`.length === 1 && `+jsAnswers+`[0].querySelector('[data-testid="usage"]') !== null`)
	usage := `document.querySelector('#messages [data-testid="usage"]').textContent`
	live := eval[string](t, tab, usage)
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	if got := eval[string](t, tab, usage); got != live || !strings.Contains(live, " tokens · ") || !strings.Contains(live, ",") {
		t.Errorf("usage reads %q live and %q after a reload, want the same words, numbers grouped", live, got)
	}
}
