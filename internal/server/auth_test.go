package server_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withKeys("k-one", "k-two"))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	tests := []struct {
		name   string
		path   string
		hdr    []string
		status int
	}{
		{"no key", "/agentik/conversations", nil, 401},
		{"wrong key", "/agentik/conversations", []string{"Authorization", "Bearer nope"}, 401},
		{"first key", "/agentik/conversations", []string{"Authorization", "Bearer k-one"}, 200},
		{"second key", "/agentik/conversations", []string{"Authorization", "Bearer k-two"}, 200},
		{"websocket needs a key", "/agentik/ws", nil, 401},
		{"health is public", "/health", nil, 200},
		{"ready is public", "/ready", nil, 200},
		{"login page is public", "/login", nil, 200},
		{"page redirects to login", "/", nil, 303},
		{"conversation page redirects to login", "/c/x", nil, 303},
		{"metrics answers 401, not the sign-in page", "/metrics", nil, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := get(tt.path, tt.hdr...).StatusCode; got != tt.status {
				t.Fatalf("status %d, want %d", got, tt.status)
			}
		})
	}

	// The UI signs in once and gets an HttpOnly session cookie.
	form := url.Values{"key": {"wrong"}, "next": {"/c/x"}}
	resp, err := noRedirect.Post(ts.URL+"/login", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Fatalf("wrong key: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	form.Set("key", "k-two")
	form.Set("next", "//evil.example/")
	resp, err = noRedirect.Post(ts.URL+"/login", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign in: %d to %q (an open redirect must not pass)", resp.StatusCode, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 || !cs[0].HttpOnly || strings.Contains(cs[0].Value, "k-two") {
		t.Fatalf("cookie %+v", cs)
	}
	if got := get("/agentik/conversations", "Cookie", cs[0].Name+"="+cs[0].Value).StatusCode; got != 200 {
		t.Fatalf("with the session cookie: %d", got)
	}
	if got := get("/", "Cookie", cs[0].Name+"="+cs[0].Value).StatusCode; got != 200 {
		t.Fatalf("page with the session cookie: %d", got)
	}
}
