package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserImport: the sidebar's Import opens a dialog (keyboard: Enter
// on the button, focus in the file picker); a file uploaded through it
// shows its result, and the imported conversation appears in the sidebar
// live; the same file again is skipped; a bad file shows the server's
// typed error; a ChatGPT export ZIP imports; a JSON mistake is said with
// its line and column.
func TestBrowserImport(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "export.json")
	bad := filepath.Join(dir, "bad.json")
	doc := `{"format":"agentik","version":1,"conversations":[{"conversation":{"id":"src1","title":"Imported pancakes"},` +
		`"messages":[{"type":"user_message","content":[{"type":"text","body":"how thin?"}]}]}]}`
	if err := os.WriteFile(good, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"format":"agentik","version":99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile("testdata/chatgpt-conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "chatgpt-export.zip")
	if err := os.WriteFile(export, zipOf(t, "chat.html", "<html></html>", "conversations.json", string(sample)), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte("[\n  {\"id\": \"a\", \"title\": nope}\n]"), 0o600); err != nil {
		t.Fatal(err)
	}
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	waitConnected(t, tab)

	do(t, tab, chromedp.Focus(chromedp.CSS(`[data-testid="import"]`)))
	do(t, tab, press("Enter", 0))
	waitJS(t, tab, "dialog open, file picker focused", `document.querySelector('#import-dialog').open && document.activeElement?.id === 'import-file'`)
	if eval[bool](t, tab, `!document.querySelector('[data-testid="import-submit"]').disabled`) {
		t.Error("Import is enabled without a file")
	}
	upload := func(file, want string) {
		t.Helper()
		do(t, tab, chromedp.SetUploadFiles(chromedp.CSS(`#import-file`), []string{file}))
		waitJS(t, tab, "import enabled", `!document.querySelector('[data-testid="import-submit"]').disabled`)
		do(t, tab, chromedp.Click(chromedp.CSS(`[data-testid="import-submit"]`)))
		waitJS(t, tab, want, `document.querySelector('[data-testid="import-result"]').textContent.includes(`+jsString(want)+`)`)
	}
	upload(good, "1 conversation imported.")
	waitJS(t, tab, "in the sidebar", `[...document.querySelectorAll('[data-testid="conversation-title"]')].some((e) => e.textContent === 'Imported pancakes')`)
	screenshot(t, tab, "import-dialog.png")
	upload(good, "0 conversations imported, 1 skipped as already imported.")
	upload(bad, "Import failed: version 99 of the agentik format")
	// A ChatGPT export ZIP as downloaded imports as its conversations.json.
	upload(export, "2 conversations imported.")
	waitJS(t, tab, "ZIP's chats in the sidebar", `[...document.querySelectorAll('[data-testid="conversation-title"]')].some((e) => e.textContent === 'Sourdough starter help')`)
	// A JSON mistake is said with its place and what was expected.
	upload(broken, "Import failed: not a ChatGPT conversations.json: line 2, column 25: expected the word null")
	if got := eval[string](t, tab, `document.querySelector('[data-testid="import-result"]').textContent`); strings.Contains(got, "invalid character") || strings.Contains(got, "literal null") {
		t.Errorf("the result shows the parser's words: %q", got)
	}
	if got := eval[string](t, tab, `document.querySelector('[data-testid="import-result"]').dataset.kind`); got != "error" {
		t.Errorf("result kind %q after a bad file", got)
	}
	do(t, tab, press("Escape", 0))
	waitJS(t, tab, "dialog closed", `!document.querySelector('#import-dialog').open`)
	if n := ts.total(t); n != 3 {
		t.Errorf("%d conversations, want 3", n)
	}
}
