package server_test

import (
	"testing"
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
