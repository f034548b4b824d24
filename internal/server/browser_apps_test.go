package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/tool"
)

// withCounterApp gives the server testdata/mcpapp-server.mjs, an MCP server
// built with the MCP Apps SDK, over stdio; its add tool needs approval.
func withCounterApp(t *testing.T) rigOption {
	t.Helper()
	entry, err := filepath.Abs("testdata/mcpapp-server.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("../../node_modules/@modelcontextprotocol/ext-apps/package.json"); err != nil {
		if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
			t.Skip("AGENTIK_TEST_NO_NODE is set")
		}
		t.Fatalf("@modelcontextprotocol/ext-apps is missing: run `npm ci`: %v", err)
	}
	cfg := tool.Config{Servers: []tool.ServerConfig{{Name: "counter", Transport: tool.TransportStdio, Command: "node", Args: []string{entry},
		Approval: tool.Approval{Default: false, Except: []string{"add"}}}}}
	m, err := tool.Start(context.Background(), cfg, tool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.WaitStarted(t.Context())
	return func(a *agent.Config, s *server.Config) {
		a.Tools, a.ContentTools = m, m
		s.Tools, s.ToolsFor, s.Credentials, s.SignIn = m, m, m, m
		a.Resources = m
		a.Approval, a.AppOnly = m.NeedsApproval, m.AppOnly
	}
}

// appTargets are the contexts attached to app iframes, by target id. Each
// is a child of the tab whose page embeds the iframe, and only inApp of
// that tab uses it.
var appTargets sync.Map

// inApp runs a on the app of the tab (a sandboxed iframe, which Chrome
// runs as a target of its own): "" and the error when it cannot.
//
// chromedp.Targets lists the targets of the whole browser, the app
// iframes of other tests' tabs too, since the package's tests share one
// Chromium: inApp takes only an iframe of the tab's own page (its
// ParentID), and it attaches with WithDetachOnCancel. Without both, the
// end of TestBrowserMCPApp cancelled a context it had attached to
// TestBrowserMCPAppShared's app, and Target.closeTarget on an iframe
// target closes the page that embeds it: the other test's tab was
// "target detached" with its app gone.
func inApp[T any](t *testing.T, tab context.Context, a chromedp.Action[T]) (T, error) {
	t.Helper()
	var zero T
	page := chromedp.FromContext(tab).Target.TargetID
	infos, err := chromedp.Targets(tab)
	if err != nil {
		return zero, err
	}
	err = fmt.Errorf("no app target")
	for _, info := range infos {
		if info.Type != "iframe" || info.ParentID != page || !strings.Contains(info.URL, "/apps/") { // the chat's /agentik/apps/view, a share's /s/…/apps/…
			continue
		}
		fctx, ok := appTargets.Load(info.TargetID)
		if !ok {
			c, cancel := chromedp.NewContext(tab, chromedp.WithTargetID(info.TargetID), chromedp.WithDetachOnCancel())
			// The first run attaches for the context's life: not under a
			// timeout, whose end would detach it.
			if _, err := chromedp.Run(c, chromedp.Evaluate[bool]("true")); err != nil {
				cancel()
				return zero, err
			}
			id := info.TargetID
			t.Cleanup(func() { cancel(); appTargets.Delete(id) })
			fctx = c
			appTargets.Store(id, fctx)
		}
		ctx, cancel := context.WithTimeout(fctx.(context.Context), 2*time.Second)
		var v T
		v, err = chromedp.Run(ctx, a)
		cancel()
		if err == nil {
			return v, nil
		}
	}
	return zero, err
}

// appText is the text of element id in the app.
func appText(t *testing.T, tab context.Context, _, id string) string {
	t.Helper()
	s, err := inApp(t, tab, chromedp.Evaluate[string](`document.getElementById('`+id+`')?.textContent ?? ''`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

func waitApp(t *testing.T, tab context.Context, callID, id, want string) {
	t.Helper()
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("app #%s last said %q", id, last)
			// What to look at when the app went missing (CI runs read "no
			// app target" for a minute when another test's end had closed
			// this tab: see inApp): the browser's iframe targets with
			// their pages, and the card's iframe in the page.
			if infos, err := chromedp.Targets(tab); err == nil {
				for _, info := range infos {
					// The tab's page target too: in a fresh-clone run the tab
					// itself answered "target detached" once the app was gone.
					if info.Type == "iframe" || info.Type == "page" {
						t.Logf("%s target %s %s attached=%v parent=%s", info.Type, info.TargetID, info.URL, info.Attached, info.ParentID)
					}
				}
			}
			t.Logf("the card's iframes: %s", eval[string](t, tab, `JSON.stringify([...document.querySelectorAll('.tool-card[data-call-id="`+callID+`"] iframe')].map((f) => f.src))`))
		}
	})
	waitFor(t, "app #"+id+" says "+want, func() bool { last = appText(t, tab, callID, id); return strings.Contains(last, want) })
}

func clickApp(t *testing.T, tab context.Context, _, id string) {
	t.Helper()
	if _, err := inApp(t, tab, chromedp.Evaluate[string](`setTimeout(() => document.getElementById('`+id+`').click(), 0), 'ok'`)); err != nil {
		t.Fatalf("click #%s in the app: %v", id, err)
	}
}

// TestBrowserInAppOwnTab: inApp reaches the app of its own tab, never
// one of another tab of the shared Chromium, and a test's end leaves the
// other tabs open (it once closed a parallel test's tab: see inApp).
func TestBrowserInAppOwnTab(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/apps/"); ok {
			fmt.Fprintf(w, `<p id="name">%s</p>`, html.EscapeString(name))
			return
		}
		if app := r.URL.Query().Get("app"); app != "" {
			fmt.Fprintf(w, `<iframe sandbox="allow-scripts" src="/apps/%s"></iframe>`, url.PathEscape(app))
		}
	}))
	t.Cleanup(srv.Close)
	other := newBrowser(t, nil).tab()
	do(t, other, chromedp.Navigate(srv.URL+"/?app=other"))
	waitFor(t, "the other tab's app", func() bool { return appText(t, other, "", "name") == "other" })

	t.Run("own", func(t *testing.T) {
		b := newBrowser(t, nil)
		mine, bare := b.tab(), b.tab()
		do(t, mine, chromedp.Navigate(srv.URL+"/?app=mine"))
		do(t, bare, chromedp.Navigate(srv.URL+"/"))
		waitFor(t, "the tab's own app", func() bool { return appText(t, mine, "", "name") == "mine" })
		if got := appText(t, bare, "", "name"); got != "(no app target)" {
			t.Errorf("a tab without an app reads %q", got)
		}
	})
	// The subtest's browser is closed, with what inApp attached in it.
	if got := eval[string](t, other, `location.search`); got != "?app=other" {
		t.Errorf("the other tab is at %q", got)
	}
	if got := appText(t, other, "", "name"); got != "other" {
		t.Errorf("the other tab's app reads %q", got)
	}
}

// TestBrowserMCPApp: a tool that names an MCP App shows it in its card,
// sandboxed; the app gets the call's input and result over the bridge; its
// button calls a tool of its server through agentik, which waits for
// approval like a model's call and shows in the conversation, and the app
// gets the result; a tool of no server of its own, junk and a flood are
// refused in the bridge; after a reload the app renders again.
func TestBrowserMCPApp(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withCounterApp(t))
	c, err := ts.Runner.Create(context.Background(), agent.NewConversation{Title: "Apps"})
	if err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "counter__show_counter", Arguments: `{"label":"mine"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Here is the counter."})
	tab := browserTab(t, ts)
	openPage(t, ts, tab, "/c/"+c.ID)
	send(t, tab, "show me the counter")
	const frame = `document.querySelector('.tool-card[data-call-id="s1"] iframe.mcp-app')`
	waitJS(t, tab, "the app in the tool card", frame+` !== null`)
	if got := eval[string](t, tab, frame+`.getAttribute('sandbox')`); got != "allow-scripts" {
		t.Errorf("sandbox = %q", got)
	}
	resp := ts.do(t, "GET", "/agentik/apps/view?server=counter&uri="+url.QueryEscape("ui://counter/app.html"), "")
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox allow-scripts;") || !strings.Contains(csp, "connect-src 'none'") {
		t.Errorf("the app's CSP = %q", csp)
	}
	waitApp(t, tab, "s1", "status", "connected")
	waitApp(t, tab, "s1", "input", `"label":"mine"`)
	waitApp(t, tab, "s1", "result", "count is 0")

	clickApp(t, tab, "s1", "add")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cards: %s", eval[string](t, tab, `JSON.stringify([...document.querySelectorAll('.tool-card')].map((c) => [c.dataset.callId, c.dataset.state, !!c.querySelector('[data-testid="approve"]'), c.className]))`))
		}
	})
	const appCard = `[...document.querySelectorAll('.tool-card')].find((c) => c.dataset.callId?.startsWith('app_'))`
	waitJS(t, tab, "the app's call waiting for approval in the conversation", appCard+`?.querySelector('[data-testid="approve"]') != null`)
	if got := appText(t, tab, "s1", "called"); got != "calling" {
		t.Errorf("before the approval the app has %q", got)
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](appCard+`.querySelector('[data-testid="approve"]').click()`))
	waitApp(t, tab, "s1", "called", "called: count is 2")
	waitJS(t, tab, "the app's call done in the conversation", appCard+`?.dataset.state === 'done'`)
	if n := len(ts.Fake.Requests()); n != 2 {
		t.Errorf("the app's call asked the model: %d requests", n)
	}

	clickApp(t, tab, "s1", "other")
	waitApp(t, tab, "s1", "other-out", "other: refused")
	// resources/read: a resource of the app's own server.
	clickApp(t, tab, "s1", "read")
	waitApp(t, tab, "s1", "read-out", "read: a note from the counter")
	// ui/message: the reader's message in the conversation, sent and
	// answered like one typed in the composer.
	clickApp(t, tab, "s1", "say")
	waitApp(t, tab, "s1", "say-out", "said: ok")
	waitJS(t, tab, "the app's message answered", `[...document.querySelectorAll('#messages .msg-user')].some((m) => m.textContent.includes('hello from the app')) && `+
		`[...document.querySelectorAll('#messages .msg-assistant')].some((m) => m.textContent.includes('You said: hello from the app'))`)
	if msgs := ts.do(t, "GET", "/agentik/conversations/"+c.ID+"/messages", ""); msgs.StatusCode != 200 {
		t.Errorf("messages: %d", msgs.StatusCode)
	} else {
		b, _ := io.ReadAll(msgs.Body)
		msgs.Body.Close()
		if !strings.Contains(string(b), `"body":"hello from the app"`) {
			t.Errorf("the app's message is not stored as a user message: %s", b)
		}
	}

	// Junk and a flood last: the bridge refuses them (a request it drops
	// in a flood is one the app waits for to its own timeout).
	clickApp(t, tab, "s1", "junk")
	waitApp(t, tab, "s1", "junk-out", "junk sent")
	waitJS(t, tab, "junk refused", `document.querySelector('.tool-card[data-call-id="s1"]').dataset.appRefused !== undefined`)

	// The server refuses it too.
	var e struct{ Error agent.Error }
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/app-calls", `{"app":"counter__show_counter","name":"weather__forecast"}`, 403, &e)
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/app-calls", `{"app":"counter__add","name":"counter__add"}`, 404, &e)

	openPage(t, ts, tab, "/c/"+c.ID)
	waitJS(t, tab, "the app after a reload", frame+` !== null`)
	waitApp(t, tab, "s1", "result", "count is 0")
	waitJS(t, tab, "the app's own call as a plain card", appCard+`?.querySelector('iframe') === null`)
}

// TestBrowserMCPAppShared: a share link's read-only view renders the app
// of a tool card again, for an anonymous reader (public shares), with the
// call's input and result; the app's tools/call is refused in the bridge
// (nothing runs, the conversation is unchanged); the link serves only
// the apps of the cards it shows.
func TestBrowserMCPAppShared(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withCounterApp(t), withPublicShares())
	admin := ts.adminKey(t)
	_, carolKey := ts.member(t, admin, "carol")
	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, carolKey, "POST", "/agentik/conversations", `{"title":"apps"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "counter__show_counter", Arguments: `{"label":"shared"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Here is the counter."})
	ts.as(t, carolKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("show me the counter"), 200)
	link := ts.shareLink(t, carolKey, c.ID, `{}`)
	before := ts.as(t, carolKey, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200)

	anon := newBrowser(t, ts).tab()
	openShare(t, anon, ts.URL+link.URL)
	const frame = `document.querySelector('.tool-card[data-call-id="s1"] iframe.mcp-app')`
	waitJS(t, anon, "the app in the shared card", frame+` !== null`)
	if got := eval[string](t, anon, frame+`.getAttribute('sandbox')`); got != "allow-scripts" {
		t.Errorf("sandbox = %q", got)
	}
	waitApp(t, anon, "s1", "status", "connected")
	waitApp(t, anon, "s1", "input", `"label":"shared"`)
	waitApp(t, anon, "s1", "result", "count is 0")

	// Read-only: the app's tool call is refused in the bridge.
	clickApp(t, anon, "s1", "add")
	waitApp(t, anon, "s1", "called", "failed:")
	waitJS(t, anon, "the call refused and logged", `document.querySelector('.tool-card[data-call-id="s1"]').dataset.appRefused === 'tools/call add'`)
	clickApp(t, anon, "s1", "say")
	waitApp(t, anon, "s1", "say-out", "say failed:")
	clickApp(t, anon, "s1", "read")
	waitApp(t, anon, "s1", "read-out", "read failed:")
	if after := ts.as(t, carolKey, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200); after != before {
		t.Errorf("the shared view's app changed the conversation:\n%s\nthen\n%s", before, after)
	}
	if n := len(ts.Fake.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2", n)
	}

	// Only the apps of the cards the link shows, only through a live link.
	for _, path := range []string{link.URL + "/apps/nope", "/s/" + strings.Repeat("B", 43) + "/apps/s1"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}

	do(t, anon, chromedp.Reload())
	waitJS(t, anon, "the share page again", `document.body.dataset.ready === 'true'`)
	waitApp(t, anon, "s1", "result", "count is 0")
}
