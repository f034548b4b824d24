package server_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// TestBrowserMemory: the model writes memory through its tool; the chat
// shows "Memory updated: …" in the call's card, live and after a reload,
// and its Revert undoes it. On the memory page the user reads the block,
// edits and saves it, clears it, and reverts the clear from the list of
// changes; each step is what the runner then holds.
func TestBrowserMemory(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	human := func() string {
		t.Helper()
		bs, err := ts.Memory.Blocks(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Label == agent.MemoryHuman {
				return b.Value
			}
		}
		t.Fatalf("no human block in %+v", bs)
		return ""
	}

	send(t, tab, `Keep it short [[tool=memory_append args={"label":"human","text":"prefers short answers"}]]`)
	note := `document.querySelector('#messages [data-testid="tool-card"] [data-testid="memory-note"]')`
	waitJS(t, tab, "the memory note in the tool card", note+`?.textContent.includes('Memory updated: added “prefers short answers” to human')`)
	waitJS(t, tab, "final answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	if n := eval[int](t, tab, `document.querySelectorAll('[data-testid="memory-note"]').length`); n != 1 {
		t.Errorf("%d memory notes, want 1", n)
	}
	screenshot(t, tab, "memory-note.png")
	if got := human(); got != "prefers short answers" {
		t.Fatalf("human = %q after the tool call", got)
	}
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "the note after a reload", note+`?.querySelector('[data-testid="memory-revert"]') !== null`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](note+`.querySelector('[data-testid="memory-revert"]').click()`))
	waitJS(t, tab, "reverted", note+`.dataset.reverted === 'true' && !`+note+`.querySelector('[data-testid="memory-revert"]')`)
	if got := human(); got != "" {
		t.Fatalf("human = %q after the revert", got)
	}

	// The memory page: read, edit, clear, revert the clear.
	if _, err := ts.Memory.Put(t.Context(), "", agent.MemoryHuman, agent.MemoryInput{Value: ptr("writes Go every day")}); err != nil {
		t.Fatal(err)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="memory-link"]').click()`))
	waitConnected(t, tab)
	block := `document.querySelector('[data-testid="memory-block"][data-label="human"]')`
	waitJS(t, tab, "the memory page with the human block", block+`?.querySelector('textarea').value === 'writes Go every day'`)
	if got := eval[string](t, tab, `[...document.querySelectorAll('[data-testid="memory-block"]')].map((b) => b.dataset.label).join(',')`); got != "human,persona" {
		t.Errorf("blocks %q", got)
	}
	if got := eval[string](t, tab, `document.querySelector('[data-testid="memory-changes"]').innerText`); !strings.Contains(got, "added “prefers short answers” to human") || !strings.Contains(got, "Reverted") {
		t.Errorf("changes list %q", got)
	}
	screenshot(t, tab, "memory-page.png")

	do(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { const ta = `+block+`.querySelector('textarea'); ta.value = 'writes Go and Rust'; ta.dispatchEvent(new Event('input')); `+block+`.querySelector('[data-testid="memory-save"]').click(); })()`))
	waitJS(t, tab, "saved and shown", `document.querySelector('[data-testid="memory-change"]')?.innerText.includes('writes Go and Rust') && `+block+`.querySelector('[data-testid="memory-count"]').textContent === '18 / 2000 characters'`)
	if got := human(); got != "writes Go and Rust" {
		t.Fatalf("human = %q after save", got)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](block+`.querySelector('[data-testid="memory-clear"]').click()`))
	waitJS(t, tab, "cleared", block+`?.querySelector('textarea').value === '' && document.querySelector('[data-testid="memory-change"]')?.innerText.includes('cleared human')`)
	if got := human(); got != "" {
		t.Fatalf("human = %q after clear", got)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="memory-change"] [data-testid="memory-revert"]').click()`))
	waitJS(t, tab, "the clear reverted", block+`?.querySelector('textarea').value === 'writes Go and Rust'`)
	if got := human(); got != "writes Go and Rust" {
		t.Fatalf("human = %q after reverting the clear", got)
	}
	screenshot(t, tab, "memory-page-after.png")
}

func ptr[T any](v T) *T { return &v }
