package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
	send(t, tab, "[[tokens=1200 delay=3ms]]")
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
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
	do(t, tab, chromedp.EmulateViewport(1000, 700))
	openPage(t, ts, tab, "/")
	followLongAnswer(t, ts, tab, "new chat")
	followLongAnswer(t, ts, tab, "existing conversation")
	id := conversationID(t, tab)
	openPage(t, ts, tab, "/c/"+id)
	followLongAnswer(t, ts, tab, "reopened conversation")
}

func TestBrowserScrollUpStopsFollowing(t *testing.T) {
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
	do(t, tab, chromedp.EmulateViewport(1000, 700))
	openPage(t, ts, tab, "/")
	jump := `document.querySelector('[data-testid="jump-latest"]')`
	if !eval[bool](t, tab, jump+`.hidden`) {
		t.Error("the jump button shows at the bottom of the thread")
	}
	send(t, tab, "[[tokens=3000 delay=3ms]]")
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

	// Scrolled up when the answer is stored: the view does not move.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#scroller').scrollTop = 400`))
	waitJS(t, tab, "persisted answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if top := eval[float64](t, tab, `document.querySelector('#scroller').scrollTop`); top != 400 {
		t.Errorf("when the answer was stored the view moved from 400 to %.0f", top)
	}
}

func TestBrowserErrorShownOnce(t *testing.T) {
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
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
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
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
	ts := newTestServer(t, withoutModel())
	for _, size := range []struct {
		name string
		act  chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1280, 860)},
		{"phone", chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
	} {
		tab := newBrowser(t, ts).tab()
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
		if n := eval[int](t, tab, `document.querySelectorAll('[data-testid="conversation-item"]').length`); n != 0 {
			t.Errorf("%s: the sidebar lists %d conversations after a failed send", size.name, n)
		}
		if eval[bool](t, tab, `document.querySelector('[data-testid="empty-state"]')?.hidden ?? true`) {
			t.Errorf("%s: the empty state is gone after a failed send", size.name)
		}
		waitStoreEmpty(t, ts)
		screenshot(t, tab, "no-model-"+size.name+".png")
	}
}

// waitStoreEmpty waits until the store holds no conversation.
func waitStoreEmpty(t *testing.T, ts *testServer) {
	t.Helper()
	for range 200 {
		cs, _, err := ts.Runner.Conversations(context.Background(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("a failed first send left a conversation in the store")
}

func TestBrowserSidebarPagesPastFirstPage(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	const n = 230
	for i := range n {
		if _, err := ts.Runner.CreateConversation(ctx, fmt.Sprintf("Chat number %d", i), false); err != nil {
			t.Fatal(err)
		}
	}
	tab := newBrowser(t, ts).tab()
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
