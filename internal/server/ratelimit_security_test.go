package server_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// withAuthLimit allows burst failures per client, one more per every, on
// clock, behind proxies.
func withAuthLimit(clock *fakeClock, burst int, every time.Duration, proxies ...string) rigOption {
	return func(_ *agent.Config, s *server.Config) {
		s.AuthFailureBurst, s.AuthFailureEvery, s.Clock = burst, every, clock.Now
		for _, p := range proxies {
			s.TrustedProxies = append(s.TrustedProxies, netip.MustParsePrefix(p))
		}
	}
}

func TestFailedAuthIsRateLimited(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ts := newTestServer(t, withKeys("k-secret"), withAuthLimit(clock, 3, time.Minute, "127.0.0.1/32"))
	login := func(client, key string) int {
		t.Helper()
		form := url.Values{"key": {key}, "next": {"/"}}.Encode()
		resp, _ := doRequest(t, "POST", ts.URL+"/login", form, "Content-Type", "application/x-www-form-urlencoded", "X-Forwarded-For", "203.0.113.9, "+client)
		return resp.StatusCode
	}
	bearer := func(client, key string) int {
		t.Helper()
		resp, _ := doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Authorization", "Bearer "+key, "X-Forwarded-For", client)
		return resp.StatusCode
	}
	check := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}

	for i := range 3 {
		check("wrong sign-in "+string(rune('1'+i)), login("10.0.0.1", "nope"), 401)
	}
	// Only failures are throttled: the next bad key waits, a good one
	// behind the same address (a NAT, a proxy) goes on (issue 22 item 15).
	check("wrong key after the burst", login("10.0.0.1", "nope"), 429)
	check("right key after the burst", login("10.0.0.1", "k-secret"), 303)
	check("bearer from the blocked address", bearer("10.0.0.1", "k-secret"), 200)
	check("bad bearer from the blocked address", bearer("10.0.0.1", "nope"), 429)
	resp, body := doRequest(t, "POST", ts.URL+"/login", "key=nope", "Content-Type", "application/x-www-form-urlencoded", "X-Forwarded-For", "10.0.0.1")
	if resp.Header.Get("Retry-After") != "60" {
		t.Errorf("Retry-After %q (%s)", resp.Header.Get("Retry-After"), body)
	}

	check("another address fails on its own", login("10.0.0.2", "nope"), 401)
	for range 2 {
		check("bad bearer key", bearer("10.0.0.2", "nope"), 401)
	}
	check("bad bearer after the burst", bearer("10.0.0.2", "nope"), 429)
	check("good bearer after the burst", bearer("10.0.0.2", "k-secret"), 200)
	check("IPv6 neighbour in the same /64", bearer("2001:db8::2", "nope"), 401)
	check("IPv6 neighbour in the same /64", bearer("2001:db8::3", "nope"), 401)
	check("IPv6 neighbour in the same /64", bearer("2001:db8::4", "nope"), 401)
	check("IPv6 neighbour in the same /64", bearer("2001:db8::5", "nope"), 429)

	clock.Advance(time.Minute)
	check("one more try after waiting", login("10.0.0.1", "nope"), 401)
}

// A bad key every few moments from one address never locks out the good
// keys sent from it (issue 22 item 15: 13 of 15 valid-key requests got a
// 429 before).
func TestBadKeysDoNotLockOutGoodKeys(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ts := newTestServer(t, withKeys("k-secret"), withAuthLimit(clock, 3, time.Minute))
	for i := range 15 {
		for range 5 {
			resp, _ := doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Authorization", "Bearer nope")
			if resp.StatusCode != 401 && resp.StatusCode != 429 {
				t.Fatalf("bad key: %d", resp.StatusCode)
			}
		}
		resp, _ := doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Authorization", "Bearer k-secret")
		if resp.StatusCode != 200 {
			t.Errorf("good key %d of 15: %d, want 200", i+1, resp.StatusCode)
		}
		clock.Advance(time.Second)
	}
}

// TestForwardedForNeedsTrustedProxy: without a trusted proxy, the peer is
// the client whatever X-Forwarded-For claims.
func TestForwardedForNeedsTrustedProxy(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ts := newTestServer(t, withKeys("k-secret"), withAuthLimit(clock, 2, time.Minute))
	for i, want := range []int{401, 401, 429} {
		resp, _ := doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Authorization", "Bearer nope", "X-Forwarded-For", "10.0.0."+string(rune('1'+i)))
		if resp.StatusCode != want {
			t.Errorf("try %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// TestWSConnectionsPerClient: one address holds at most WSConnsPerClient
// WebSockets; another address has its own budget, and a closed one frees
// its place.
func TestWSConnectionsPerClient(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(_ *agent.Config, s *server.Config) {
		s.WSConnsPerClient = 2
		s.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	dial := func(client string) (*websocket.Conn, int) {
		t.Helper()
		c, resp, err := websocket.Dial(t.Context(), ts.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {client}}})
		if err != nil {
			if resp == nil {
				t.Fatal(err)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { c.CloseNow() })
		return c, resp.StatusCode
	}
	a1, _ := dial("10.0.0.1")
	dial("10.0.0.1")
	if _, code := dial("10.0.0.1"); code != http.StatusTooManyRequests {
		t.Fatalf("third connection: %d, want 429", code)
	}
	if c, code := dial("10.0.0.2"); c == nil {
		t.Fatalf("another address: %d", code)
	}
	a1.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "a place freed after closing one", func() bool { // the server frees it when its handler returns
		c, _ := dial("10.0.0.1")
		return c != nil
	})
}
