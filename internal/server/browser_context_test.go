package server_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// TestBrowserContextDividerAndGauge: the context gauge fills in after a
// turn, a compaction shows live as a divider "N earlier messages
// summarized" that expands to the summary, and both render on first paint
// after a reload.
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
	waitJS(t, tab, "live divider", `document.querySelector('[data-testid=summary-label]')?.textContent === '4 earlier messages summarized'`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-testid=summary-divider] summary").click()`))
	waitJS(t, tab, "expanded summary", `document.querySelector('[data-testid=summary-divider] details').open && document.querySelector('[data-testid=summary-body]').offsetHeight > 0`)
	if got := eval[string](t, tab, `document.querySelector('[data-testid=summary-body]').textContent`); got != res.Message.Summary {
		t.Errorf("summary body %q, want %q", got, res.Message.Summary)
	}

	// First paint after a reload: the divider and the gauge come from the server.
	openPage(t, ts, tab, "/c/"+id)
	waitConnected(t, tab)
	label := eval[string](t, tab, `document.querySelector('[data-testid=context-label]').textContent`)
	if !strings.HasSuffix(label, "/ 8.2k tokens") || eval[bool](t, tab, `document.querySelector('#context-gauge').hidden`) {
		t.Errorf("gauge after reload: %q", label)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('[data-testid=summary-divider]').length`); n != 1 {
		t.Errorf("%d dividers after reload, want 1", n)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-testid=summary-divider] summary").click()`))
	waitJS(t, tab, "expanded after reload", `document.querySelector('[data-testid=summary-body]').offsetHeight > 0`)
	noOverflow(t, tab, "with the divider open")
	screenshot(t, tab, "context.png")
}
