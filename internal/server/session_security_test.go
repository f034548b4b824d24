package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// TestSessionCookie: a sign-in lasts SessionTTL, signing out ends it on
// the server (a kept copy of the cookie stops working), and the cookie is
// Secure behind a trusted TLS proxy only.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	proxied := func(trusted bool) rigOption {
		return func(_ *agent.Config, s *server.Config) {
			s.Clock, s.SessionTTL = clock.Now, time.Hour
			if trusted {
				s.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
		}
	}
	ts := newTestServer(t, withKeys("k-secret"), proxied(true))
	signIn := func(ts *testServer, hdr ...string) *http.Cookie {
		t.Helper()
		resp, body := doRequest(t, "POST", ts.URL+"/login", "key=k-secret&next=/", append([]string{"Content-Type", "application/x-www-form-urlencoded"}, hdr...)...)
		if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
			t.Fatalf("sign in: %d %v %s", resp.StatusCode, resp.Cookies(), body)
		}
		return resp.Cookies()[0]
	}
	api := func(c *http.Cookie) int {
		t.Helper()
		resp, _ := doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Cookie", c.Name+"="+c.Value)
		return resp.StatusCode
	}

	c := signIn(ts)
	if c.Secure || c.MaxAge != 3600 || !c.Expires.Equal(clock.Now().Add(time.Hour)) {
		t.Errorf("cookie %+v: want not Secure, MaxAge 3600, Expires in an hour", c)
	}
	if got := api(c); got != 200 {
		t.Fatalf("with the cookie: %d", got)
	}
	other := signIn(ts)
	resp, _ := doRequest(t, "POST", ts.URL+"/logout", "", "Cookie", c.Name+"="+c.Value)
	if resp.StatusCode != 303 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if got := api(c); got != 401 {
		t.Errorf("a kept copy of a signed-out cookie: %d, want 401", got)
	}
	if got := api(other); got != 200 {
		t.Errorf("another session after one signed out: %d, want 200", got)
	}
	clock.Advance(time.Hour)
	if got := api(other); got != 401 {
		t.Errorf("an expired session: %d, want 401", got)
	}

	if c := signIn(ts, "X-Forwarded-Proto", "https"); !c.Secure {
		t.Error("behind a trusted TLS proxy the cookie is not Secure")
	}
	untrusted := newTestServer(t, withKeys("k-secret"), proxied(false))
	if c := signIn(untrusted, "X-Forwarded-Proto", "https"); c.Secure {
		t.Error("an untrusted peer's X-Forwarded-Proto made the cookie Secure")
	}
}

// TestSignOutOutlivesRestart: a signed-out session stays signed out for a
// server that did not see the sign-out (a restarted process, another
// instance): the revocation is in the database, not only in memory.
func TestSignOutOutlivesRestart(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-secret"))
	resp, body := doRequest(t, "POST", ts.URL+"/login", "key=k-secret&next=/", "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
		t.Fatalf("sign in: %d %v %s", resp.StatusCode, resp.Cookies(), body)
	}
	c := resp.Cookies()[0]
	// A second server over the same database knows nothing in memory.
	restarted := httptest.NewServer(server.New(server.Config{Runner: ts.Runner, Conversations: ts.Convs, Agents: ts.Agents, Memory: ts.Memory, Broker: ts.Broker, Store: ts.Store,
		Revocations: ts.Store, Users: ts.Store, APIKeys: []string{"k-secret"}}))
	defer restarted.Close()
	api := func(url string) int {
		t.Helper()
		resp, _ := doRequest(t, "GET", url+"/agentik/conversations", "", "Cookie", c.Name+"="+c.Value)
		return resp.StatusCode
	}
	if got := api(restarted.URL); got != 200 {
		t.Fatalf("the session on the second server before sign-out: %d", got)
	}
	if resp, _ := doRequest(t, "POST", ts.URL+"/logout", "", "Cookie", c.Name+"="+c.Value); resp.StatusCode != 303 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if got := api(restarted.URL); got != 401 {
		t.Errorf("a signed-out session on a server that did not see the sign-out: %d, want 401", got)
	}
}
