package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// withServerClock runs the server's own clock (sessions, the WebSocket
// strike window) on c.
func withServerClock(c *backClock) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.Clock = c.now }
}

// memberSignedIn makes a member with a key (as the admin key admin) and
// signs them in with it in a fresh browser; it returns the member and the
// browser, signed in, on the new-chat page of its first tab.
func memberSignedIn(t *testing.T, ts *testServer, admin string) (agent.User, *browser, context.Context) {
	t.Helper()
	var ann agent.User
	if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users", `{"name":"Ann","email":"ann@example.com"}`, &ann); code != 201 {
		t.Fatalf("create user: %d", code)
	}
	var key agent.NewKey
	if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users/"+ann.ID+"/keys", `{"name":"laptop"}`, &key); code != 201 {
		t.Fatalf("create key: %d", code)
	}
	br := newBrowser(t, ts)
	tab := br.tab()
	do(t, tab, chromedp.Navigate(ts.URL+"/"))
	waitJS(t, tab, "sign-in page", `location.pathname === '/login'`)
	if eval[bool](t, tab, `document.querySelector('[data-testid="login-reason"]') !== null`) {
		t.Error("a first visit's sign-in page gives a reason")
	}
	do(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { document.querySelector('[data-testid="login-key"]').value = %q; document.querySelector('.login button[type="submit"]').click(); })()`, key.Key)))
	waitAfterSubmit(t, tab, "the chat", `location.pathname === '/'`)
	waitConnected(t, tab)
	return ann, br, tab
}

// TestBrowserDisabledMemberSignedOut: an admin disables a member; every
// tab of theirs (a chat, the inbox page) lands on the sign-in page, which
// says the account was disabled, instead of reconnecting for ever.
func TestBrowserDisabledMemberSignedOut(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	ann, br, chat := memberSignedIn(t, ts, admin)
	inbox := br.tab()
	openPage(t, ts, inbox, "/inbox")

	if code := bearerDo(t, "PATCH", admin, ts.URL+"/agentik/users/"+ann.ID, `{"disabled":true}`, nil); code != 200 {
		t.Fatalf("disable: %d", code)
	}
	for _, tab := range []context.Context{chat, inbox} {
		waitAfterSubmit(t, tab, "the sign-in page saying why", `location.pathname === '/login' && document.querySelector('[data-testid="login-reason"]')?.textContent.includes('Your account was disabled')`)
	}
	if got := eval[string](t, inbox, `new URLSearchParams(location.search).get('next')`); got != "/inbox" {
		t.Errorf("the sign-in page leads back to %q, want /inbox", got)
	}
	// Sent there by the socket's close (1008), which said why.
	if got := eval[string](t, chat, `new URLSearchParams(location.search).get('reason')`); got != "account_disabled" {
		t.Errorf("the sign-in page's reason is %q, want the close's account_disabled", got)
	}
}

// TestBrowserExpiredSessionSignedOut: a session that expired while its
// tab was open: the next connection is refused (401), and the tab goes to
// the sign-in page saying so, where a reconnect loop was.
func TestBrowserExpiredSessionSignedOut(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	const admin = "k-admin"
	var clock backClock
	ts := newTestServer(t, withKeys(admin), withServerClock(&clock))
	_, _, tab := memberSignedIn(t, ts, admin)
	do(t, tab, trackSockets())
	openPage(t, ts, tab, "/")

	clock.set(-2 * server.SessionTTL) // the server's clock is past the session's end
	do(t, tab, chromedp.Evaluate[chromedp.Void](`window.__sockets.forEach((s) => s.close())`))
	waitAfterSubmit(t, tab, "the sign-in page saying why", `location.pathname === '/login' && document.querySelector('[data-testid="login-reason"]')?.textContent.includes('Your session expired')`)
}

// TestWSAccessEndedSaysWhy: a member's WebSocket closes with 1008 when the
// key it came with is revoked, or the account disabled, the reason naming
// which (the sign-in page says it in words).
func TestWSAccessEndedSaysWhy(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	for i, tc := range []struct{ end, method, path, body, want string }{
		{"revoke", "DELETE", "/keys/", "", "key_revoked: The key you signed in with was revoked."},
		{"disable", "PATCH", "", `{"disabled":true}`, "account_disabled: Your account was disabled."},
	} {
		t.Run(tc.end, func(t *testing.T) {
			var u agent.User
			if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users", fmt.Sprintf(`{"name":"U%d","email":"u%d@example.com"}`, i, i), &u); code != 201 {
				t.Fatalf("create user: %d", code)
			}
			var key agent.NewKey
			if code := bearerDo(t, "POST", admin, ts.URL+"/agentik/users/"+u.ID+"/keys", `{"name":"k"}`, &key); code != 201 {
				t.Fatalf("create key: %d", code)
			}
			ws := dialWSOpts(t, ts.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key.Key}}})
			ws.write(`{"op":"ping","id":"1"}`)
			if f, err := ws.readFrame(); err != nil || !f.OK {
				t.Fatalf("ping: %+v %v", f, err)
			}
			path := ts.URL + "/agentik/users/" + u.ID
			if tc.path != "" {
				path += tc.path + key.ID
			}
			if code := bearerDo(t, tc.method, admin, path, tc.body, nil); code/100 != 2 {
				t.Fatalf("%s: %d", tc.end, code)
			}
			_, err := ws.readFrame()
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.HasPrefix(ce.Reason, tc.want) {
				t.Fatalf("after %s: %v, want close 1008 %q…", tc.end, err, tc.want)
			}
		})
	}
}
