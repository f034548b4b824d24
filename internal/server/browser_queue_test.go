package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserQueuedSends: messages typed while a turn runs are queued, not
// refused; every tab shows them in order with a cancel control (a tab
// opened later too); a cancel in one tab removes the message everywhere,
// and the rest run after the turn, in order.
func TestBrowserQueuedSends(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Queue"})
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "first answer", Hold: hold})
	ts.Fake.Enqueue(llmtest.Reply{Text: "second answer"})
	a, b := br.tab(), br.tab()
	openPage(t, ts, a, "/c/"+c.ID)
	openPage(t, ts, b, "/c/"+c.ID)

	send(t, a, "one")
	waitJS(t, a, "running", `!document.querySelector('[data-testid="stop"]').hidden`)
	send(t, a, "two")
	waitJS(t, a, "first queued", `document.querySelectorAll('[data-testid="queued"]').length === 1`)
	send(t, a, "three")
	const queued = `[...document.querySelectorAll('[data-testid="queued"]')].map((q) => q.querySelector('.user-text').textContent + '@' + q.querySelector('[data-testid="queued-position"]').textContent).join('|')`
	const want = "two@Queued · runs next|three@Queued · 2"
	waitJS(t, a, "two queued in the sending tab", queued+` === '`+want+`'`)
	waitJS(t, b, "two queued in the other tab", queued+` === '`+want+`'`)
	if !eval[bool](t, a, `document.querySelector('#prompt').value === ''`) {
		t.Error("the composer kept the queued text")
	}
	late := br.tab()
	openPage(t, ts, late, "/c/"+c.ID)
	waitJS(t, late, "queue in a tab opened later", queued+` === '`+want+`'`)

	do(t, b, chromedp.Click(chromedp.CSS(`[data-testid="queued"]:nth-child(2) [data-testid="cancel-queued"]`)))
	for _, tab := range []context.Context{a, b, late} {
		waitJS(t, tab, "cancelled message gone", queued+` === 'two@Queued · runs next'`)
	}
	close(hold)
	for _, tab := range []context.Context{a, b} {
		waitJS(t, tab, "queue drained", `document.querySelectorAll('[data-testid="queued"]').length === 0 && document.querySelector('#queue').hidden`)
		waitJS(t, tab, "both answers", jsAnswers+`.length === 2 && !document.querySelector('#live').children.length`)
		if got := eval[string](t, tab, `[...document.querySelectorAll('#messages > [data-type="user_message"] .user-text')].map((e) => e.textContent).join(' ')`); got != "one two" {
			t.Errorf("user messages %q, want %q", got, "one two")
		}
	}
}

// TestBrowserQueueOfSeveralPages: a page opened while 12 sends of 40 KiB
// wait, under a 100 KiB page bound, lists every one, in order.
func TestBrowserQueueOfSeveralPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withQueuePageBytes(100<<10))
	br := newBrowser(t, ts)
	ctx := context.Background()
	c, err := ts.Runner.Create(ctx, agent.NewConversation{Title: "Long queue"})
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "first answer", Hold: hold})
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 12 {
		text := fmt.Sprintf("q%02d", i)
		if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text(text + " " + strings.Repeat("z", 40<<10))}, OnBusy: agent.OnBusyQueue}); err != nil {
			t.Fatal(err)
		}
		want = append(want, text)
	}
	tab := br.tab()
	openPage(t, ts, tab, "/c/"+c.ID)
	const queued = `[...document.querySelectorAll('[data-testid="queued"]')].map((q) => q.querySelector('.user-text').textContent.slice(0, 3)).join(' ')`
	waitJS(t, tab, "every queued send", queued+` === '`+strings.Join(want, " ")+`'`)
}
