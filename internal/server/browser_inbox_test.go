package server_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserInboxAnswers: a tool call waiting for approval in one tab's
// conversation appears live on the Inbox page of two other tabs, with the
// navigation's count in every tab; approved in one inbox tab, it leaves
// the other at once, the turn finishes, and every count goes to 0.
func TestBrowserInboxAnswers(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	br := newBrowser(t, ts)
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Trip"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "i1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "It is sunny."})

	const count = `document.querySelector('[data-testid="inbox-count"]')`
	const none = `(` + count + `.hidden && !` + count + `.checkVisibility())`
	one := `(!` + count + `.hidden && ` + count + `.textContent === '1')`
	in1, in2 := br.tab(), br.tab()
	for _, tab := range []context.Context{in1, in2} {
		openPage(t, ts, tab, "/inbox")
		waitJS(t, tab, "an empty inbox", `document.querySelector('[data-testid="inbox-empty"]').checkVisibility() && `+none)
	}
	chat := br.tab()
	openPage(t, ts, chat, "/c/"+c.ID)
	send(t, chat, "weather?")

	item := `document.querySelector('[data-testid="inbox-item"][data-id="approval.` + c.ID + `.i1"]')`
	for _, tab := range []context.Context{in1, in2} {
		waitJS(t, tab, "the waiting call in the inbox", item+` !== null && `+item+`.innerText.includes('weather__forecast') && `+item+`.innerText.includes('Oslo') && `+item+`.innerText.includes('Trip')`)
		waitJS(t, tab, "the count", one)
	}
	waitJS(t, chat, "the count in the conversation's tab", one)
	if got := eval[string](t, in1, item+`.querySelector('[data-testid="inbox-open"]').getAttribute('href')`); got != "/c/"+c.ID {
		t.Errorf("the item opens %q, want its conversation", got)
	}
	screenshot(t, in1, "inbox.png")

	do(t, in1, chromedp.Click(chromedp.CSS(`[data-testid="inbox-item"] [data-testid="inbox-approve"]`)))
	for _, tab := range []context.Context{in1, in2} {
		waitJS(t, tab, "the item gone", item+` === null && document.querySelector('[data-testid="inbox-empty"]').checkVisibility()`)
		waitJS(t, tab, "no count", none)
	}
	waitIdle(t, ts, c.ID)
	waitJS(t, chat, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if got := answerText(t, chat, 0); got != "It is sunny." {
		t.Errorf("answer %q", got)
	}
	waitJS(t, chat, "no count in the conversation's tab", none)
}
