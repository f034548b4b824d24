package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// handbook writes a text file for an upload and returns its path.
func handbook(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "handbook.txt")
	if err := os.WriteFile(p, []byte("# Leave\n\nEvery employee gets 30 days of paid leave per year.\n\n# Travel\n\nBook trains for trips under four hours.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const askFileSearch = `[[tool=file_search args={"query":"paid leave"}]]`

// citationChecks waits for the last answer's citation chip naming
// handbook.txt and opens it: the passage shows.
func citationChecks(t *testing.T, tab context.Context, when string) {
	t.Helper()
	chip := jsAnswers + `[` + jsAnswers + `.length - 1]?.querySelector('[data-testid="citation"]')`
	waitJS(t, tab, when+": the citation chip", chip+`?.querySelector('[data-testid="citation-file"]').textContent === 'handbook.txt'`)
	if eval[bool](t, tab, chip+`.querySelector('[data-testid="citation-text"]').checkVisibility()`) {
		t.Errorf("%s: the passage shows before the chip is opened", when)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](chip+`.querySelector('summary').click()`))
	waitJS(t, tab, when+": the passage", chip+`.querySelector('[data-testid="citation-text"]').checkVisibility() && `+chip+`.querySelector('[data-testid="citation-text"]').innerText.includes('30 days of paid leave')`)
}

// TestBrowserKnowledgeCites: on the Knowledge page a base is created and
// a text file uploaded into it, its processing shown live; "Ask with this
// base" starts a chat with the base, whose answer (the fake model calls
// file_search) shows a citation chip naming the file that opens the
// passage, after a reload too; the base is deleted from the page.
func TestBrowserKnowledgeCites(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/knowledge")
	waitJS(t, tab, "an empty page", `document.querySelector('[data-testid="knowledge-empty"]') !== null`)
	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="knowledge-name"]`), "Handbook"),
		chromedp.Click(chromedp.CSS(`[data-testid="knowledge-create"]`)),
	)
	base := `document.querySelector('[data-testid="knowledge-base"][data-name="Handbook"]')`
	waitJS(t, tab, "the new base", base+` !== null`)
	do(t, tab, chromedp.SetUploadFiles(`[data-testid="knowledge-base"][data-name="Handbook"] [data-testid="knowledge-upload"]`, []string{handbook(t)}))
	row := base + `?.querySelector('[data-testid="knowledge-file"]')`
	waitJS(t, tab, "the file's row", row+`?.querySelector('[data-testid="knowledge-file-name"]').textContent === 'handbook.txt'`)
	waitJS(t, tab, "the file processed", row+`?.dataset.status === 'processed' && `+row+`.innerText.includes('ready') && `+base+`.querySelector('[data-testid="knowledge-counts"]').textContent.startsWith('1 file')`)
	do(t, tab,
		chromedp.SetValue(chromedp.CSS(`[data-testid="knowledge-base"][data-name="Handbook"] [data-testid="knowledge-query"]`), "paid leave"),
		chromedp.Click(chromedp.CSS(`[data-testid="knowledge-base"][data-name="Handbook"] [data-testid="knowledge-search-form"] button`)),
	)
	waitJS(t, tab, "the search's passage", base+`.querySelector('[data-testid="knowledge-result"]')?.innerText.includes('30 days of paid leave') && `+base+`.querySelector('[data-testid="knowledge-result"]').innerText.includes('handbook.txt')`)
	screenshot(t, tab, "knowledge.png")

	do(t, tab, chromedp.Evaluate[chromedp.Void](base+`.querySelector('[data-testid="knowledge-ask"]').click()`))
	waitJS(t, tab, "the new chat with the base", `location.pathname === '/' && document.querySelector('[data-testid="knowledge-attachment"]')?.innerText.includes('Handbook')`)
	waitConnected(t, tab)
	send(t, tab, askFileSearch)
	id := conversationID(t, tab)
	waitJS(t, tab, "the answer", jsAnswers+`.length >= 1 && !document.querySelector('#live').children.length`)
	citationChecks(t, tab, "live")
	screenshot(t, tab, "citations.png")
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	citationChecks(t, tab, "after a reload")
	waitIdle(t, ts, id)
	if ks, err := ts.Convs.Knowledge(context.Background(), id); err != nil || len(ks) != 1 {
		t.Errorf("the chat's knowledge: %v, %v", ks, err)
	}

	openPage(t, ts, tab, "/knowledge")
	do(t, tab, chromedp.Evaluate[chromedp.Void](base+`.querySelector('[data-testid="knowledge-delete"]').click()`))
	waitJS(t, tab, "delete asks again", base+`.querySelector('[data-testid="knowledge-delete"]').textContent.includes('for good')`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](base+`.querySelector('[data-testid="knowledge-delete"]').click()`))
	waitJS(t, tab, "the base gone", base+` === null && document.querySelector('[data-testid="knowledge-empty"]') !== null`)
}

// TestBrowserComposerAttachesDocument: a document picked in the composer
// is uploaded at once, its chip following its processing; sent, the chat
// searches it and the answer cites it.
func TestBrowserComposerAttachesDocument(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/")
	do(t, tab, chromedp.SetUploadFiles(`#file`, []string{handbook(t)}))
	chip := `document.querySelector('[data-testid="document-attachment"]')`
	waitJS(t, tab, "the document processed", chip+`?.dataset.status === 'processed' && `+chip+`.innerText.includes('handbook.txt')`)
	send(t, tab, askFileSearch)
	conversationID(t, tab)
	waitJS(t, tab, "the tray emptied", chip+` === null`)
	waitJS(t, tab, "the answer", jsAnswers+`.length >= 1 && !document.querySelector('#live').children.length`)
	citationChecks(t, tab, "live")
	if got := eval[string](t, tab, `document.querySelector('#messages').innerText`); strings.Contains(got, "no passage") {
		t.Errorf("file_search found nothing: %s", got)
	}
	// The message carries the document: a chip that opens it, live and
	// after a reload; the model read its text in the message.
	fileChip := `document.querySelector('#messages [data-testid="file-chip"]')`
	waitJS(t, tab, "the message's file chip", fileChip+`?.innerText.includes('handbook.txt') && `+fileChip+`.getAttribute('href').startsWith('/agentik/files/file-')`)
	do(t, tab, chromedp.Reload())
	waitConnected(t, tab)
	waitJS(t, tab, "the file chip after a reload", fileChip+`?.innerText.includes('handbook.txt') && `+fileChip+`.getAttribute('href').startsWith('/agentik/files/file-')`)
	if !modelUserRead(ts, "30 days of paid leave") {
		t.Errorf("the model was not given the document's text in the message")
	}
}

// TestKnowledgePageIsolation: a member's knowledge page and new-chat
// page (/?knowledge=) show their own bases and never another member's.
func TestKnowledgePageIsolation(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	key := func(name string) string {
		var u agent.User
		if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users", `{"name":"`+name+`","email":"`+name+`@example.com"}`, &u); code != 201 {
			t.Fatalf("create user: %d", code)
		}
		var k agent.NewKey
		if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users/"+u.ID+"/keys", `{"name":"k"}`, &k); code != 201 {
			t.Fatalf("create key: %d", code)
		}
		return k.Key
	}
	ann, bob := key("ann"), key("bob")
	var kb agent.Knowledge
	if code := bearerDo(t, "POST", ann, ts.URL+"/agentik/knowledge", `{"name":"Secret plans"}`, &kb); code != 201 {
		t.Fatalf("create base: %d", code)
	}
	page := func(key, path string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return string(b)
	}
	for _, tc := range []struct {
		who, key string
		sees     bool
	}{{"ann", ann, true}, {"bob", bob, false}} {
		if got := strings.Contains(page(tc.key, "/knowledge"), "Secret plans"); got != tc.sees {
			t.Errorf("%s's knowledge page shows ann's base: %v", tc.who, got)
		}
		if got := strings.Contains(page(tc.key, "/?knowledge="+kb.ID), `data-knowledge-id="`+kb.ID+`"`); got != tc.sees {
			t.Errorf("%s's new chat with ann's base: %v", tc.who, got)
		}
	}
}
