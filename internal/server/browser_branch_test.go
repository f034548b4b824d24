package server_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// pathJS renders the open conversation's messages: text, with ‹pos› after a
// message that has versions.
const pathJS = `[...document.querySelectorAll('#messages > article[data-type$="_message"]')].map((m) => {
	const t = (m.querySelector('.user-text') || m.querySelector('.msg-body .md'))?.textContent.trim() || '';
	const pos = m.querySelector('[data-testid=branch-pos]')?.textContent;
	return pos ? t + '‹' + pos + '›' : t;
}).join('|')`

func waitPath(t *testing.T, tabs []context.Context, want string) {
	t.Helper()
	for i, tab := range tabs {
		if testing.Verbose() {
			t.Logf("tab %d: %s", i+1, eval[string](t, tab, pathJS))
		}
		waitJS(t, tab, "path "+want+" in tab "+string(rune('1'+i)), pathJS+` === `+jsString(want))
	}
}

func jsString(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}

// TestBrowserBranches: regenerate, edit and "‹ 1 / 2 ›" in one tab, the
// other tab following each move live.
func TestBrowserBranches(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "branches"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{Text: "a1"})
	sendIdle(t, ts, c.ID, "q1")
	tab1, tab2 := br.tab(), br.tab()
	tabs := []context.Context{tab1, tab2}
	for _, tab := range tabs {
		openPage(t, ts, tab, "/c/"+c.ID)
	}
	waitPath(t, tabs, "q1|a1")

	// Regenerate the answer: a second version, shown in both tabs.
	ts.Fake.Enqueue(llmtest.Reply{Text: "a1b"})
	do(t, tab1, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-type=assistant_message] [data-branch=regenerate]').click()`))
	waitPath(t, tabs, "q1|a1b‹2 / 2›")
	waitIdle(t, ts, c.ID)

	// The other tab goes back to the first version.
	waitConnected(t, tab2)
	do(t, tab2, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-type=assistant_message] [data-branch=prev]').click()`))
	waitPath(t, tabs, "q1|a1‹1 / 2›")
	if eval[bool](t, tab1, `!document.querySelector('[data-type=assistant_message] [data-branch=prev]').disabled`) {
		t.Error("‹ is enabled on the first version")
	}

	// Edit the question: its second version and a new answer.
	waitConnected(t, tab1)
	ts.Fake.Enqueue(llmtest.Reply{Text: "b1"})
	do(t, tab1, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-type=user_message] [data-branch=edit]').click()`))
	waitJS(t, tab1, "editor", `document.querySelector('[data-testid=edit-input]') === document.activeElement`)
	do(t, tab1, chromedp.Evaluate[chromedp.Void](`(() => { document.querySelector('[data-testid=edit-input]').value = 'q1 edited'; document.querySelector('[data-testid=edit-send]').click(); })()`))
	waitPath(t, tabs, "q1 edited‹2 / 2›|b1")
	waitIdle(t, ts, c.ID)
	reqs := ts.Fake.Requests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1].Content; len(last) != 2 || got != "q1 edited" {
		t.Errorf("the edit's request holds %d messages, last %q", len(last), got)
	}
	noOverflow(t, tab1, "with branch controls")
	screenshot(t, tab1, "branches.png")

	// Back to the first question: its branch shows its latest answer.
	waitConnected(t, tab1)
	do(t, tab1, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-type=user_message] [data-branch=prev]').click()`))
	waitPath(t, tabs, "q1‹1 / 2›|a1b‹2 / 2›")
}

// TestBrowserOpenDuringRegenerate: a page opened while a regenerate runs
// shows it running until it ends. The page resumes its stream from the
// turn's first event: from the last message on the path (the question),
// the replay held the first answer's end, which stopped the turn in the
// page early (and a branch re-render then missed its "‹ 2 / 2 ›").
func TestBrowserOpenDuringRegenerate(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "regenerating"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{Text: "a1"})
	sendIdle(t, ts, c.ID, "q1")
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "a1b", Hold: hold})
	ts.Fake.Enqueue(llmtest.Reply{Text: "a2"})
	if _, err := ts.Runner.Regenerate(ctx, c.ID, ""); err != nil {
		t.Fatal(err)
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+c.ID)
	// A send queued behind the turn comes live after the replay: once the
	// page shows it, the page has handled every event before it.
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("q2")}, OnBusy: agent.OnBusyQueue}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, "the queued send", `document.querySelectorAll('[data-testid="queued"]').length === 1`)
	if got := eval[string](t, tab, `document.querySelector('#main').dataset.running + ' ' + document.querySelector('[data-testid="stop"]').hidden`); got != "true false" {
		t.Fatalf("mid-regenerate the page shows running, stop hidden = %q, want %q", got, "true false")
	}
	close(hold)
	waitPath(t, []context.Context{tab}, "q1|a1b‹2 / 2›|q2|a2")
}
