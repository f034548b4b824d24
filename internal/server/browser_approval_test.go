package server_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestBrowserApproveFromSecondTab: a tool call that waits shows Approve /
// Deny on its card in every tab (one opened mid-wait too); approving with
// edited arguments in the second tab runs the tool and both tabs show the
// decision and the answer.
func TestBrowserApproveFromSecondTab(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	br := newBrowser(t, ts)
	c, err := ts.Runner.CreateConversation(context.Background(), "Approve", false)
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "b1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "It is sunny."})
	a := br.tab()
	openPage(t, ts, a, "/c/"+c.ID)
	send(t, a, "weather?")
	const box = `document.querySelector('.tool-card[data-call-id="b1"] [data-testid="approval"]')`
	waitJS(t, a, "approval controls in the first tab", box+` !== null`)
	b := br.tab()
	openPage(t, ts, b, "/c/"+c.ID)
	waitJS(t, b, "approval controls in a tab opened mid-wait", box+` !== null`)
	do(t, b, chromedp.Evaluate[chromedp.Void](`(() => { const e = document.querySelector('.tool-card[data-call-id="b1"] [data-testid="approval-arguments"]'); e.value = '{"city":"Bergen"}'; e.dispatchEvent(new Event('input')); })()`))
	do(t, b, chromedp.Click(chromedp.CSS(`.tool-card[data-call-id="b1"] [data-testid="approve"]`)))
	for _, tab := range []context.Context{a, b} {
		waitJS(t, tab, "controls gone", box+` === null`)
		waitJS(t, tab, "the answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
		if got := answerText(t, tab, 0); got != "It is sunny." {
			t.Errorf("answer %q", got)
		}
	}
	if !eval[bool](t, a, `document.querySelector('.tool-card[data-call-id="b1"]').textContent.includes('Bergen')`) {
		t.Error("the tool card does not show the result of the edited arguments")
	}
}
