package tool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// memCredentials is a CredentialStore in memory.
type memCredentials struct {
	mu   sync.Mutex
	rows map[[2]string][]byte
	seq  map[[2]string]int
	n    int
}

func newMemCredentials() *memCredentials {
	return &memCredentials{rows: map[[2]string][]byte{}, seq: map[[2]string]int{}}
}

func (c *memCredentials) Credential(_ context.Context, server, subject string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.rows[[2]string{server, subject}]; ok {
		return b, nil
	}
	return nil, agent.ErrNotFound
}

func (c *memCredentials) LatestCredentialSubject(_ context.Context, server string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, at := "", 0
	for k, n := range c.seq {
		if k[0] == server && k[1] != "" && n > at {
			best, at = k[1], n
		}
	}
	if best == "" {
		return "", agent.ErrNotFound
	}
	return best, nil
}

func (c *memCredentials) SetCredential(_ context.Context, server, subject string, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.rows[[2]string{server, subject}], c.seq[[2]string{server, subject}] = data, c.n
	return nil
}

func (c *memCredentials) DeleteCredential(_ context.Context, server, subject string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, [2]string{server, subject})
	delete(c.seq, [2]string{server, subject})
	return nil
}

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// oauthExample runs the MCP SDK's OAuth example server with refresh
// tokens added (cmd/agentik/testdata/oauth_refresh.mjs) and returns its
// MCP URL, its authorization server and its events.
func oauthExample(t *testing.T) (mcpURL, authURL string, events <-chan string, proc *os.Process) {
	t.Helper()
	root, _ := everything(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "simpleStreamableHttp.js")
	mcpPort, authPort := freePort(t), freePort(t)
	cmd := exec.Command("node", "--import", filepath.Join(root, "cmd", "agentik", "testdata", "oauth_refresh.mjs"), entry, "--oauth")
	cmd.Env = append(os.Environ(), fmt.Sprintf("MCP_PORT=%d", mcpPort), fmt.Sprintf("MCP_AUTH_PORT=%d", authPort))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 100)
	up := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for n := 0; sc.Scan(); {
			var ev struct{ Event string }
			if strings.Contains(sc.Text(), "listening on port") {
				if n++; n == 2 {
					close(up)
				}
			} else if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event != "" {
				ch <- ev.Event
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done; _ = cmd.Wait() })
	select {
	case <-up:
	case <-time.After(20 * time.Second):
		t.Fatal("the OAuth example server did not start")
	}
	return fmt.Sprintf("http://localhost:%d/mcp", mcpPort), fmt.Sprintf("http://localhost:%d", authPort), ch, cmd.Process
}

func said(t *testing.T, events <-chan string, want string) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("the server said %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not say %q", want)
	}
}

// follow opens a sign-in link as a browser would (the demo authorization
// server consents at once) up to agentik's callback, and returns the
// callback's state and code.
func follow(t *testing.T, link, redirect string) (state, code string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), redirect) {
		t.Fatalf("the sign-in ended at %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return u.Query().Get("state"), u.Query().Get("code")
}

// TestOAuthPreRegisteredPerUserRefresh: a client id given in mcp.json (no
// dynamic registration), tokens per user (bob has none and is asked to
// sign in while local works; he signs in and gets his own session; a link
// of bob's is refused to local), a token refreshed before it expires on
// the injected clock, and sign-in states that were altered or expired.
func TestOAuthPreRegisteredPerUserRefresh(t *testing.T) {
	t.Parallel()
	mcpURL, authURL, remote, proc := oauthExample(t)
	const redirect = "http://127.0.0.1:9/agentik/oauth/callback"
	// Register a client beforehand, as an operator would.
	resp, err := http.Post(authURL+"/register", "application/json", strings.NewReader(`{"client_name":"operator","redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&client)
	resp.Body.Close()
	if client.ClientID == "" {
		t.Fatalf("registration: %d", resp.StatusCode)
	}
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"remote":{"url":"`+mcpURL+`","oauth":{"clientId":"${CID}"}}}}`),
		func(k string) string { return map[string]string{"CID": client.ClientID}[k] })
	if err != nil {
		t.Fatal(err)
	}
	creds := newMemCredentials()
	clk := &testClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	ev := newEvents()
	m := start(t, cfg, Options{OnChange: ev.on, OAuth: &OAuthOptions{Credentials: creds, RedirectURL: redirect, Clock: clk.now}})
	waitChange(t, m, ev, "remote", agent.ToolServerAuthRequired)

	ctx := t.Context()
	bob := agent.WithPrincipal(ctx, agent.Principal{UserID: "bob", Role: agent.RoleMember})
	link := m.ServersFor(ctx)[0].SignInURL
	if u, err := url.Parse(link); err != nil || u.Query().Get("client_id") != client.ClientID {
		t.Fatalf("link %q: not the configured client", link)
	}
	state, code := follow(t, link, redirect)
	if _, err := m.CompleteSignIn(ctx, state+"x", code, nil); !errors.Is(err, ErrBadState) {
		t.Errorf("an altered state: %v", err)
	}
	if name, err := m.CompleteSignIn(ctx, state, code, nil); err != nil || name != "remote" {
		t.Fatalf("CompleteSignIn = %q, %v", name, err)
	}
	said(t, remote, "token")
	waitChange(t, m, ev, "remote", agent.ToolServerReady)
	if got, err := m.Call(ctx, "remote__greet", `{"name":"local"}`); err != nil || !strings.Contains(got, "Hello, local!") {
		t.Fatalf("local's call = %q, %v", got, err)
	}

	// bob has not signed in.
	if s := m.ServersFor(bob)[0]; s.State != agent.ToolServerAuthRequired || s.SignInURL == "" {
		t.Fatalf("bob sees %+v", s)
	}
	if s := m.ServersFor(ctx)[0]; s.State != agent.ToolServerReady || s.SignInURL != "" {
		t.Fatalf("local sees %+v", s)
	}
	_, err = m.Call(bob, "remote__greet", `{"name":"bob"}`)
	toolErr(t, err, `tool server "remote" needs you to sign in`)
	bobState, bobCode := follow(t, m.ServersFor(bob)[0].SignInURL, redirect)
	local := agent.Local
	if _, err := m.CompleteSignIn(ctx, bobState, bobCode, &local); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Errorf("bob's link completed by local: %v", err)
	}
	if _, err := m.CompleteSignIn(bob, bobState, bobCode, nil); err != nil {
		t.Fatal(err)
	}
	said(t, remote, "token")
	if got, err := m.Call(bob, "remote__greet", `{"name":"bob"}`); err != nil || !strings.Contains(got, "Hello, bob!") {
		t.Fatalf("bob's call = %q, %v", got, err)
	}
	for k, b := range creds.rows {
		if bytes.Contains(b, []byte("access_token")) {
			t.Errorf("%v is stored in the clear", k)
		}
	}
	if _, ok := creds.rows[[2]string{"remote", ""}]; ok {
		t.Error("a registration was stored for a configured client")
	}

	// Half a minute before the hour-long token expires (on our clock; the
	// server would still take it), the next call refreshes it first.
	clk.advance(time.Hour - 30*time.Second)
	if got, err := m.Call(ctx, "remote__greet", `{"name":"later"}`); err != nil || !strings.Contains(got, "Hello, later!") {
		t.Fatalf("the call near expiry = %q, %v", got, err)
	}
	said(t, remote, "refreshed")

	// Every token revoked: the supervisor tries bob's token when local's is
	// gone, that fails too, and the server is auth_required; whoever signs in
	// next (bob) lists the tools, and local is asked to sign in.
	if err := proc.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	said(t, remote, "revoked")
	_, err = m.Call(ctx, "remote__greet", `{"name":"local"}`)
	toolErr(t, err, `tool server "remote" needs you to sign in`)
	waitChange(t, m, ev, "remote", agent.ToolServerAuthRequired)
	if len(creds.rows) != 0 {
		t.Errorf("tokens kept after they were refused and not refreshable: %d", len(creds.rows))
	}
	bobState, bobCode = follow(t, m.ServersFor(bob)[0].SignInURL, redirect)
	if _, err := m.CompleteSignIn(bob, bobState, bobCode, nil); err != nil {
		t.Fatal(err)
	}
	said(t, remote, "token")
	waitChange(t, m, ev, "remote", agent.ToolServerReady)
	if got, err := m.Call(bob, "remote__greet", `{"name":"bob"}`); err != nil || !strings.Contains(got, "Hello, bob!") {
		t.Fatalf("bob's call after signing in again = %q, %v", got, err)
	}
	_, err = m.Call(ctx, "remote__greet", `{"name":"local"}`)
	toolErr(t, err, `tool server "remote" needs you to sign in`)

	// A link whose time is up.
	carol := agent.WithPrincipal(ctx, agent.Principal{UserID: "carol", Role: agent.RoleMember})
	old, oldCode := follow(t, m.ServersFor(carol)[0].SignInURL, redirect)
	clk.advance(DefaultSignInTTL + time.Second)
	if _, err := m.CompleteSignIn(carol, old, oldCode, nil); !errors.Is(err, ErrBadState) {
		t.Errorf("an expired state: %v", err)
	}
}

// An entry's "oauth" object is checked like the rest of mcp.json, and its
// client secret is a secret.
func TestOAuthConfig(t *testing.T) {
	env := func(k string) string { return map[string]string{"S": "client-secret-value"}[k] }
	for _, tc := range []struct{ entry, want string }{
		{`{"command":"x","oauth":{"clientId":"a"}}`, `server "s": oauth: is for remote servers`},
		{`{"url":"http://h/mcp","oauth":"yes"}`, `server "s": oauth: must be an object`},
		{`{"url":"http://h/mcp","oauth":{"clientSecret":"${S}"}}`, `server "s": oauth.clientId: is required with clientSecret`},
		{`{"url":"http://h/mcp","oauth":{"clientId":"${MISSING}"}}`, `server "s": oauth.clientId:`},
	} {
		_, err := ParseConfig([]byte(`{"mcpServers":{"s":`+tc.entry+`}}`), env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.entry, err, tc.want)
		}
	}
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"s":{"url":"http://h/mcp","oauth":{"clientId":"a","clientSecret":"${S}","scopes":["x"]}}}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Servers[0]
	if sc.OAuth == nil || sc.OAuth.ClientID != "a" || sc.OAuth.ClientSecret != "client-secret-value" || len(sc.OAuth.Scopes) != 1 {
		t.Fatalf("oauth = %+v", sc.OAuth)
	}
	if got := sc.redact("token request failed: client-secret-value"); strings.Contains(got, "client-secret-value") {
		t.Errorf("the client secret is not redacted: %q", got)
	}
}
