package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/protocol"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request with headers (name, value pairs) and returns the
// response with its body read.
func doRequest(t testing.TB, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestSignInOrigin: a form post with Origin: null passes only when the
// browser says it is same-origin; refusals of navigations are HTML pages.
func TestSignInOrigin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-secret"))
	form := url.Values{"key": {"k-secret"}, "next": {"/"}}.Encode()
	ct := "application/x-www-form-urlencoded"
	tests := []struct {
		name   string
		hdr    []string
		status int
		html   bool
	}{
		{"no origin (non-browser client)", nil, 303, false},
		{"same origin, null", []string{"Origin", "null", "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "navigate"}, 303, false},
		{"own origin", []string{"Origin", ts.URL, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "navigate"}, 303, false},
		{"null without fetch metadata", []string{"Origin", "null"}, 403, false},
		{"null from a sibling site", []string{"Origin", "null", "Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "navigate"}, 403, true},
		{"null cross-site", []string{"Origin", "null", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"}, 403, true},
		{"other origin", []string{"Origin", "http://evil.example", "Sec-Fetch-Mode", "navigate"}, 403, true},
		{"other origin, old browser", []string{"Origin", "http://evil.example", "Accept", "text/html,*/*"}, 403, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := doRequest(t, "POST", ts.URL+"/login", form, append([]string{"Content-Type", ct}, tt.hdr...)...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status == 303 && len(resp.Cookies()) != 1 {
				t.Errorf("signed in without a cookie")
			}
			if tt.status != 303 && len(resp.Cookies()) != 0 {
				t.Errorf("refused but got cookies %v", resp.Cookies())
			}
			if got := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"); tt.status != 303 && got != tt.html {
				t.Errorf("Content-Type %q, want HTML %v: %s", resp.Header.Get("Content-Type"), tt.html, body)
			}
		})
	}
	// The API answers JSON even to a browser.
	resp, body := doRequest(t, "GET", ts.URL+"/agentik/conversations", "", "Sec-Fetch-Mode", "navigate", "Accept", "text/html")
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("API refusal: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestLoginRedirectStaysLocal: next= leads only to a clean path on this
// server; anything a browser could read as another host goes to /.
func TestLoginRedirectStaysLocal(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t) // no keys: GET /login redirects at once
	tests := []struct{ next, want string }{
		{"/c/abc", "/c/abc"},
		{"/c/abc?x=1", "/c/abc?x=1"},
		{"/\t/evil.com", "/"},
		{"/\n/evil.com", "/"},
		{"/\r/evil.com", "/"},
		{"//evil.com", "/"},
		{"/\\evil.com", "/"},
		{"/a\\b", "/"},
		{"https://evil.com/", "/"},
		{"evil.com", "/"},
		{"/%09/evil.com", "/%09/evil.com"}, // stays a path: the browser does not decode it
		{"", "/"},
	}
	for _, tt := range tests {
		resp, _ := doRequest(t, "GET", ts.URL+"/login?next="+url.QueryEscape(tt.next), "")
		if got := resp.Header.Get("Location"); resp.StatusCode != 303 || got != tt.want {
			t.Errorf("next=%q: %d to %q, want 303 to %q", tt.next, resp.StatusCode, got, tt.want)
		}
	}
}

// TestWSPrunedResyncSaysWhereTheLogStarts: a pruned resync on the whole
// log carries start, from which a subscription replays what is kept.
func TestWSPrunedResyncSaysWhereTheLogStarts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("", false)
	if _, err := ts.Store.Prune(t.Context(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r := w.subscribe(map[string]any{"stream": "all", "after": 0})
	f := w.next()
	if f.Type != protocol.FrameResync || f.Sub != r.Sub || f.Reason != "pruned" || f.Start == nil || *f.Start != r.Head {
		t.Fatalf("got %+v, want resync pruned with start %d", f, r.Head)
	}
	// A conversation made after the pruning resumes from 0.
	c2 := w.create("", false)
	w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c2.ID, "after": 0})
	if f := w.next(); f.Type != protocol.FrameCaughtUp {
		t.Fatalf("got %+v, want caught_up", f)
	}
	_ = c
}
