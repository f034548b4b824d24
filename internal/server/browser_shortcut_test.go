package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// CDP's modifier bits (Input.dispatchKeyEvent).
const (
	modCtrl  = 2
	modShift = 8
)

// chord presses a key as a keyboard does: key is KeyboardEvent.key, code
// its KeyboardEvent.code and vk its virtual key code; text is what it
// types ("" for none).
func chord(key, code string, vk int64, text string, modifiers int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk, Text: text, UnmodifiedText: text, Modifiers: modifiers}
		if text == "" {
			down.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, up)
		return err
	})
}

var (
	keyQuestion   = chord("?", "Slash", 191, "?", modShift)
	keyShiftEsc   = chord("Escape", "Escape", 27, "", modShift)
	keyNewChat    = chord("O", "KeyO", 79, "", modCtrl|modShift)
	keySearch     = chord("k", "KeyK", 75, "", modCtrl)
	keyCopyAnswer = chord("C", "KeyC", 67, "", modCtrl|modShift)
)

const jsShortcuts = `document.querySelector('[data-testid="shortcuts-dialog"]')`

// TestBrowserShortcuts: "?" lists the shortcuts (but types "?" in the
// message box); Ctrl+Shift+C copies the last answer's markdown; Ctrl+K
// goes to the search box and Shift+Esc back to the message box, from
// which Ctrl+Shift+O starts a new chat. (Esc stops an answer:
// TestBrowserStop.)
func TestBrowserShortcuts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	ts.Fake.Enqueue(llmtest.Reply{Text: "The **first** answer."})
	send(t, tab, "one")
	waitJS(t, tab, "the first answer", jsAnswers+`.length === 1`)
	ts.Fake.Enqueue(llmtest.Reply{Text: "The `last` answer, in *markdown*."})
	send(t, tab, "two")
	waitJS(t, tab, "the last answer", jsAnswers+`.length === 2 && !document.querySelector('#live').children.length`)
	id := conversationID(t, tab)

	// "?" outside a text field lists the shortcuts; Esc closes the list.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	do(t, tab, keyQuestion)
	waitJS(t, tab, "the shortcuts", jsShortcuts+`.open`)
	rows := eval[string](t, tab, `[...`+jsShortcuts+`.querySelectorAll('[data-testid="shortcut"]')].map((r) => r.innerText.replace(/\s+/g, ' ').trim()).join(' | ')`)
	for _, want := range []string{"New chat Ctrl/⌘ Shift O", "Search chats Ctrl/⌘ K", "Focus the message box Shift Esc", "Stop the answer Esc", "Copy the last answer Ctrl/⌘ Shift C", "Show these shortcuts ?"} {
		if !strings.Contains(rows, want) {
			t.Errorf("the shortcuts list lacks %q: %s", want, rows)
		}
	}
	screenshot(t, tab, "shortcuts.png")
	do(t, tab, press("Escape", 0))
	waitJS(t, tab, "the shortcuts closed", `!`+jsShortcuts+`.open`)

	// In the message box "?" is a character.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#prompt').focus()`))
	do(t, tab, keyQuestion)
	waitJS(t, tab, "a ? typed", `document.querySelector('#prompt').value === '?'`)
	if eval[bool](t, tab, jsShortcuts+`.open`) {
		t.Error("? typed in the message box opened the shortcuts")
	}

	// Ctrl+Shift+C, even from the message box: the last answer's source.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`navigator.clipboard.writeText = (text) => { window.__copied = text; return Promise.resolve(); }`))
	do(t, tab, keyCopyAnswer)
	waitJS(t, tab, "the answer copied", `window.__copied !== undefined`)
	if got := eval[string](t, tab, `window.__copied`); got != "The `last` answer, in *markdown*." {
		t.Errorf("copied %q", got)
	}
	waitJS(t, tab, "the copy's toast", `document.getElementById('toasts').innerText.includes('Copied the last answer')`)

	// Ctrl+K: the search box; Shift+Esc: back to the message box.
	do(t, tab, keySearch)
	waitJS(t, tab, "the search box focused", `document.activeElement?.id === 'conv-search'`)
	do(t, tab, keyShiftEsc)
	waitJS(t, tab, "the message box focused", `document.activeElement?.id === 'prompt'`)

	// Ctrl+Shift+O: a new chat, ready to type in.
	do(t, tab, keyNewChat)
	waitJS(t, tab, "a new chat", `location.pathname === '/' && !document.querySelector('#main').dataset.conversationId && document.activeElement?.id === 'prompt'`)
	if n := eval[int](t, tab, `document.querySelectorAll('#conv-list > [data-id="`+id+`"]').length`); n != 1 {
		t.Errorf("the old chat is listed %d times after a new chat", n)
	}
}
