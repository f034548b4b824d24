package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// withPublicShares turns AGENTIK_PUBLIC_SHARES on.
func withPublicShares() rigOption {
	return func(_ *agent.Config, s *server.Config) { s.PublicShares = true }
}

// signInTab signs a fresh profile in with key through the sign-in form
// and returns its tab, on the chat.
func signInTab(t testing.TB, ts *testServer, key string) context.Context {
	t.Helper()
	tab := newBrowser(t, ts).tab()
	do(t, tab, chromedp.Navigate(ts.URL+"/login"))
	waitJS(t, tab, "sign-in form", `document.querySelector('[data-testid="login-key"]') !== null`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, key)))
	waitAfterSubmit(t, tab, "the chat", `location.pathname === '/'`)
	waitConnected(t, tab)
	return tab
}

// openShare opens a share link in tab and waits for its page.
func openShare(t testing.TB, tab context.Context, url string) {
	t.Helper()
	do(t, tab, chromedp.Navigate(url))
	waitJS(t, tab, "the share page", `document.body.dataset.page === 'share' && document.body.dataset.ready === 'true'`)
}

// TestBrowserShareLink: the owner makes a link in the chat's share
// dialog; a signed-in colleague opens it read-only (the transcript with
// its tool card and rendered markdown, no composer), does not see a turn
// sent after the link was made, and continues it as their own copy, which
// answers while the original stays as it was; revoked, the link is the
// 404 page; an anonymous visitor is sent to sign in, unless public shares
// are on.
func TestBrowserShareLink(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withTools())
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	bob, bobKey := ts.member(t, admin, "bob")

	ann := signInTab(t, ts, annKey)
	send(t, ann, `Weather in **Paris**? [[tool=weather__forecast args={"city":"Paris","days":2}]]`)
	waitJS(t, ann, "the answer after the tool", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length && document.querySelector('#main').dataset.running !== 'true'`)
	id := conversationID(t, ann)

	// Ann makes the link in the share dialog.
	click(t, ann, "Share a read-only link")
	waitJS(t, ann, "the share dialog", `document.querySelector('[data-testid="share-dialog"]').open`)
	click(t, ann, "Create link")
	waitJS(t, ann, "the link", `document.querySelector('[data-testid="share-url"]').value.includes('/s/') && document.querySelectorAll('[data-testid="share-link"]').length === 1`)
	screenshot(t, ann, "share-dialog.png")
	link := eval[string](t, ann, `document.querySelector('[data-testid="share-url"]').value`)
	if !strings.HasPrefix(link, ts.URL+"/s/") {
		t.Fatalf("link %q", link)
	}

	// A turn after the link is not in it.
	ts.as(t, annKey, "POST", "/agentik/conversations/"+id+"/send", sendBody("a later secret"), 200)

	bobTab := signInTab(t, ts, bobKey)
	openShare(t, bobTab, link)
	check := func(when string) {
		t.Helper()
		if got := eval[string](t, bobTab, `document.querySelector('[data-testid="share-title"]').textContent`); got == "" {
			t.Errorf("%s: no title", when)
		}
		if n := eval[int](t, bobTab, `document.querySelectorAll('#messages [data-testid="tool-card"]').length`); n != 1 {
			t.Errorf("%s: %d tool cards, want 1", when, n)
		}
		if got := eval[string](t, bobTab, `document.querySelector('[data-testid="tool-result"]').textContent`); !strings.Contains(got, "showers") {
			t.Errorf("%s: tool result %q", when, got)
		}
		if got := eval[string](t, bobTab, `document.querySelector('#messages .msg-user').textContent`); !strings.Contains(got, "Weather in **Paris**?") {
			t.Errorf("%s: user message %q", when, got)
		}
		if got := answerText(t, bobTab, 0); !strings.Contains(got, "tool said:") {
			t.Errorf("%s: answer %q", when, got)
		}
		if md := eval[bool](t, bobTab, `document.querySelectorAll('#messages .md-raw').length === 0 && document.querySelectorAll('#messages .md').length === 1`); !md {
			t.Errorf("%s: the answer's markdown is not rendered", when)
		}
		if body := eval[string](t, bobTab, `document.body.innerText`); strings.Contains(body, "later secret") {
			t.Errorf("%s: a turn made after the link shows: %s", when, body)
		}
		if n := eval[int](t, bobTab, `document.querySelectorAll('#composer, #prompt, textarea').length`); n != 0 {
			t.Errorf("%s: the share page has a composer", when)
		}
	}
	check("opened")
	screenshot(t, bobTab, "share-page.png")
	do(t, bobTab, chromedp.Reload())
	waitJS(t, bobTab, "the share page again", `document.body.dataset.ready === 'true'`)
	check("reloaded")

	// Bob continues it as his copy, and goes on in it.
	click(t, bobTab, "Continue as my copy")
	waitAfterSubmit(t, bobTab, "his copy", `location.pathname.startsWith('/c/') && !location.pathname.endsWith('/`+id+`')`)
	waitConnected(t, bobTab)
	waitJS(t, bobTab, "the copied history", jsAnswers+`.length === 1 && document.querySelectorAll('#messages [data-testid="tool-card"]').length === 1`)
	copyID := conversationID(t, bobTab)
	send(t, bobTab, "and tomorrow?")
	waitJS(t, bobTab, "his answer", jsAnswers+`.length === 2`)
	if got := answerText(t, bobTab, 1); got != "You said: and tomorrow?" {
		t.Errorf("the copy answers %q", got)
	}
	ts.as(t, bobKey, "GET", "/agentik/conversations/"+copyID, "", 200)
	cp, err := ts.Store.Conversation(context.Background(), copyID)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Owner != bob {
		t.Errorf("the copy's owner is %q, want bob %q", cp.Owner, bob)
	}
	msgs := ts.as(t, annKey, "GET", "/agentik/conversations/"+id+"/messages", "", 200)
	if strings.Contains(msgs, "and tomorrow") || !strings.Contains(msgs, "a later secret") {
		t.Errorf("the original changed: %s", msgs)
	}
	ts.as(t, bobKey, "GET", "/agentik/conversations/"+id, "", 404) // the link gave him no access to the original

	// Ann revokes it in the dialog: Bob's next open is the 404 page.
	click(t, ann, "Revoke")
	waitJS(t, ann, "revoked", `document.querySelectorAll('[data-testid="share-link"]').length === 0`)
	openShare(t, bobTab, link)
	waitJS(t, bobTab, "the 404 page", `document.querySelector('[data-testid="share-not-found"]') !== null && document.querySelector('#messages') === null`)

	// Anonymous: sent to sign in.
	second := ts.shareLink(t, annKey, id, `{}`)
	anon := newBrowser(t, ts).tab()
	do(t, anon, chromedp.Navigate(ts.URL+second.URL))
	waitJS(t, anon, "the sign-in page", `location.pathname === '/login' && document.querySelector('[data-testid="login"]') !== null`)

	// With public shares on, an anonymous visitor reads a link (and is
	// offered to sign in to continue it).
	pub := newTestServer(t, withPublicShares())
	pubAdmin := pub.adminKey(t)
	_, carolKey := pub.member(t, pubAdmin, "carol")
	var c agent.Conversation
	if err := json.Unmarshal([]byte(pub.as(t, carolKey, "POST", "/agentik/conversations", `{"title":"public"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	pub.as(t, carolKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("open to all"), 200)
	pub.Fake.Enqueue(llmtest.Reply{Text: "A chart:\n\n```html title=\"Dot\"\n<p>a dot</p>\n```\n"})
	pub.as(t, carolKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("draw it"), 200)
	ps := pub.shareLink(t, carolKey, c.ID, `{}`)
	anonPub := newBrowser(t, pub).tab()
	openShare(t, anonPub, pub.URL+ps.URL)
	if got := answerText(t, anonPub, 0); got != "You said: open to all" {
		t.Errorf("anonymous reader sees %q", got)
	}
	if n := eval[int](t, anonPub, `document.querySelectorAll('[data-testid="share-copy"]').length + (document.querySelector('[data-testid="share-sign-in"]') ? 0 : 10)`); n != 0 {
		t.Errorf("an anonymous reader is offered to copy, or not to sign in (%d)", n)
	}
	// The answer's artifact opens beside the transcript, sandboxed.
	waitJS(t, anonPub, "the artifact's Open button", `document.querySelector('#messages [data-testid="artifact-open"]') !== null`)
	do(t, anonPub, chromedp.Evaluate[chromedp.Void](`document.querySelector('#messages [data-testid="artifact-open"]').click()`))
	waitJS(t, anonPub, "the artifact panel", `(() => { const p = document.querySelector('[data-testid="artifact-panel"]'); return p && !p.hidden && p.querySelector('iframe')?.getAttribute('sandbox') === 'allow-scripts'; })()`)
	do(t, anonPub, chromedp.Navigate(pub.URL+"/s/"+strings.Repeat("B", 43)))
	waitJS(t, anonPub, "the 404 page", `document.querySelector('[data-testid="share-not-found"]') !== null`)
}
