package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// TestBrowserContextDividerAndGauge: the context gauge fills in after a
// turn, a compaction shows live as a divider naming what it summarized
// ("Summary of 4 earlier messages, from … to …"), between the turns it
// summarized and the one it kept, that expands to the summary; both render
// on first paint after a reload.
func TestBrowserContextDividerAndGauge(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)
	if eval[bool](t, tab, `!document.querySelector('#context-gauge').hidden`) {
		t.Error("the gauge shows before any model call")
	}
	send(t, tab, "first question about compaction")
	id := conversationID(t, tab)
	waitJS(t, tab, "gauge after the first turn", `!document.querySelector('#context-gauge').hidden && document.querySelector('[data-testid=context-label]').textContent.endsWith('/ 8.2k tokens')`)
	waitIdle(t, ts, id)
	sendIdle(t, ts, id, "second question")
	sendIdle(t, ts, id, "third question")

	var res agent.CompactResult
	ts.call(t, "POST", "/agentik/conversations/"+id+"/compact", "", 200, &res)
	if !res.Compacted {
		t.Fatalf("compact: %+v", res)
	}
	const label = `Summary of 4 earlier messages, from "first question about compaction" to "second question"`
	waitJS(t, tab, "live divider", `document.querySelector('[data-testid=summary-label]')?.textContent === `+jsString(label))
	// Between the second turn's answer and the third question, which it kept.
	between := `(() => { const d = document.querySelector('[data-testid=summary-divider]');
		return d.previousElementSibling?.innerText.includes('You said: second question') && d.nextElementSibling?.innerText.trim().startsWith('third question'); })()`
	if !eval[bool](t, tab, between) {
		t.Errorf("live divider not between the turns: %q", eval[string](t, tab, `document.querySelector('#messages').innerText`))
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-testid=summary-divider] summary").click()`))
	waitJS(t, tab, "expanded summary", `document.querySelector('[data-testid=summary-divider] details').open && document.querySelector('[data-testid=summary-body]').offsetHeight > 0`)
	if got := eval[string](t, tab, `document.querySelector('[data-testid=summary-body]').textContent`); got != res.Message.Summary {
		t.Errorf("summary body %q, want %q", got, res.Message.Summary)
	}

	// First paint after a reload: the divider and the gauge come from the server.
	openPage(t, ts, tab, "/c/"+id)
	waitConnected(t, tab)
	gauge := eval[string](t, tab, `document.querySelector('[data-testid=context-label]').textContent`)
	if !strings.HasSuffix(gauge, "/ 8.2k tokens") || eval[bool](t, tab, `document.querySelector('#context-gauge').hidden`) {
		t.Errorf("gauge after reload: %q", gauge)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('[data-testid=summary-divider]').length`); n != 1 {
		t.Errorf("%d dividers after reload, want 1", n)
	}
	if got := eval[string](t, tab, `document.querySelector('[data-testid=summary-label]').textContent`); got != label || !eval[bool](t, tab, between) {
		t.Errorf("divider after reload %q, between the turns: %v", got, eval[bool](t, tab, between))
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-testid=summary-divider] summary").click()`))
	waitJS(t, tab, "expanded after reload", `document.querySelector('[data-testid=summary-body]').offsetHeight > 0`)
	noOverflow(t, tab, "with the divider open")
	screenshot(t, tab, "context.png")
}

// fixedWindow is a model window of n tokens.
type fixedWindow int

func (w fixedWindow) Window(context.Context, string) int { return int(w) }
func (fixedWindow) Learn(string, int)                    {}

// TestBrowserSummaryDividerBetweenTurns: in a small window, a compaction
// during a turn (stored after that turn's question) shows live, and after
// a reload, as a divider between turns — after the answer to the last
// question it names, before the next question — that names the first and
// the last question it summarized.
func TestBrowserSummaryDividerBetweenTurns(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(a *agent.Config, _ *server.Config) { a.Windows, a.NoMemory = fixedWindow(700), true })
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	question := func(i int) string {
		return fmt.Sprintf("Question %d about the trip: %s", i, strings.Repeat("more details here ", 12))
	}
	id := ""
	for i := 1; i <= 10; i++ {
		send(t, tab, question(i))
		if id == "" {
			id = conversationID(t, tab)
		}
		waitJS(t, tab, "answer", fmt.Sprintf(`document.querySelector('#messages').innerText.includes(%s)`, jsString("You said: Question "+strconv.Itoa(i))))
		waitIdle(t, ts, id)
		if eval[bool](t, tab, `!!document.querySelector('[data-testid=summary-divider]')`) {
			break
		}
	}
	var sum agent.Message
	for _, m := range ts.history(t, id) {
		if m.Type == agent.MessageSummary {
			sum = m
			break
		}
	}
	if sum.ID == "" || sum.KeptID == "" {
		t.Fatalf("no compaction with a span: %+v", sum)
	}
	var first, last int
	if _, err := fmt.Sscanf(sum.FirstText, "Question %d", &first); err != nil {
		t.Fatalf("first text %q", sum.FirstText)
	}
	if _, err := fmt.Sscanf(sum.LastText, "Question %d", &last); err != nil {
		t.Fatalf("last text %q", sum.LastText)
	}
	check := func(when string) {
		t.Helper()
		label := eval[string](t, tab, `document.querySelector('[data-testid=summary-divider] summary').innerText`)
		want := fmt.Sprintf(`Summary of %d earlier messages, from "Question %d about the trip: more details`, sum.Replaces, first)
		if !strings.HasPrefix(label, want) || !strings.Contains(label, fmt.Sprintf(`" to "Question %d about the trip:`, last)) || first != 1 {
			t.Errorf("%s: divider %q", when, label)
		}
		ok := eval[bool](t, tab, fmt.Sprintf(`(() => { const d = document.querySelector('[data-testid=summary-divider]');
			return d.previousElementSibling?.innerText.includes(%s) && d.nextElementSibling?.innerText.trim().startsWith(%s); })()`,
			jsString("You said: Question "+strconv.Itoa(last)+" "), jsString("Question "+strconv.Itoa(last+1)+" ")))
		if !ok {
			t.Errorf("%s: the divider is not between the answer to question %d and question %d: %q", when, last, last+1,
				eval[string](t, tab, `document.querySelector('#messages').innerText`))
		}
	}
	check("live")
	openPage(t, ts, tab, "/c/"+id)
	check("after a reload")
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=summary-divider]').scrollIntoView({block: 'center'})`))
	noOverflow(t, tab, "with the divider")
	screenshot(t, tab, "summary-divider.png")
}
