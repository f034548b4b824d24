package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// oauthRemote is the MCP SDK's OAuth example server
// (simpleStreamableHttp.js --oauth: an MCP server on one port, its demo
// authorization server on another), with testdata/oauth_refresh.mjs
// adding refresh tokens to the demo provider.
type oauthRemote struct {
	cmd    *exec.Cmd
	url    string // the MCP endpoint
	auth   string // the authorization server
	events chan string
	logs   *strings.Builder
}

func startOAuthRemote(t *testing.T) *oauthRemote {
	t.Helper()
	entry := filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "simpleStreamableHttp.js")
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
			t.Skip("AGENTIK_TEST_NO_NODE is set")
		}
		t.Fatalf("@modelcontextprotocol/sdk is missing: run `npm ci` (or set AGENTIK_TEST_NO_NODE=1): %v", err)
	}
	_, mcpPort, _ := strings.Cut(freeAddr(t), ":")
	_, authPort, _ := strings.Cut(freeAddr(t), ":")
	cmd := exec.Command("node", "--import", "./testdata/oauth_refresh.mjs", entry, "--oauth")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "MCP_PORT=" + mcpPort, "MCP_AUTH_PORT=" + authPort}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &oauthRemote{cmd: cmd, url: "http://localhost:" + mcpPort + "/mcp", auth: "http://localhost:" + authPort, events: make(chan string, 100), logs: &strings.Builder{}}
	cmd.Stderr = r.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "listening on port") {
				if n++; n == 2 { // the authorization server and the MCP server
					close(listening)
				}
			}
			var ev struct{ Event string }
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Event != "" {
				r.events <- ev.Event
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(20 * time.Second):
		t.Fatalf("the OAuth example server did not start:\n%s", r.logs)
	}
	return r
}

// next waits for the remote's next event and checks it.
func (r *oauthRemote) next(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-r.events:
		if got != want {
			t.Fatalf("the remote said %q, want %q", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the remote did not say %q", want)
	}
}

// quiet checks that the remote said nothing since the last next.
func (r *oauthRemote) quiet(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.events:
		t.Fatalf("the remote said %q", got)
	default:
	}
}

// signal sends sig and waits for the remote to say it was handled.
func (r *oauthRemote) signal(t *testing.T, sig syscall.Signal, want string) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	r.next(t, want)
}

// toolStartBound bounds the wait for a tool server's state: a node MCP
// server's first start (or its restart after a first start that timed
// out) takes tens of seconds on two cores under the whole parallel suite,
// and the wait is on events, so a passing run never waits for the bound.
const toolStartBound = 3 * testwait.Timeout

// waitToolState waits for the tool server name to be in state (watching
// the tool_server events of the agent stream) and returns it as
// GET /agentik/tools shows it.
func waitToolState(t *testing.T, p *proc, name, state string) agent.ToolServer {
	t.Helper()
	return waitToolStateAs(t, p, "", name, state)
}

// waitToolStateAs is waitToolState with an API key (none: "").
func waitToolStateAs(t *testing.T, p *proc, key, name, state string) agent.ToolServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolStartBound)
	defer cancel()
	events := sse(t, ctx, key, p.url("/agentik/events"), "")
	find := func() (agent.ToolServer, bool) {
		var res struct{ Servers []agent.ToolServer }
		var header map[string]string
		if key != "" {
			header = map[string]string{"Authorization": "Bearer " + key}
		}
		requestJSON(t, "GET", p.url("/agentik/tools"), "", header, &res)
		for _, s := range res.Servers {
			if s.Name == name && s.State == state {
				return s, true
			}
		}
		return agent.ToolServer{}, false
	}
	if s, ok := find(); ok {
		return s
	}
	for ev := range events {
		var e struct {
			Type   string
			Server *agent.ToolServer
		}
		if json.Unmarshal([]byte(ev.data), &e) == nil && e.Type == agent.AgentToolServer && e.Server != nil && e.Server.Name == name && e.Server.State == state {
			if s, ok := find(); ok {
				return s
			}
		}
	}
	t.Fatalf("tool server %q did not become %s within %v; logs:\n%s", name, state, toolStartBound, p.logs)
	return agent.ToolServer{}
}

// greet runs a turn in which the fake model calls remote__greet, and
// returns that call's tool_result.
func greet(t *testing.T, p *proc, fake *llmtest.Server, who string) agent.Event {
	t.Helper()
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_" + who, Name: "remote__greet", Arguments: `{"name":"` + who + `"}`}}})
	fake.Enqueue(llmtest.Reply{Text: "done"})
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"greet"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev agent.Event
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == agent.EventToolResult {
			return ev
		}
	}
	t.Fatalf("no tool_result in\n%s\nlogs:\n%s", body, p.logs)
	return agent.Event{}
}

// TestMCPOAuthRemoteServer: the real binary with the MCP SDK's OAuth
// example server in its mcp.json (no client id: agentik registers itself).
// The server is auth_required with a consent link; headless Chromium signs in through the link in
// the sidebar; the tool works; after a restart it works without a new
// sign-in (the token sealed in the database with AGENTIK_SECRET_KEY);
// once the server expires the access token, agentik refreshes it and the
// call works; once the refresh token is gone too, the server is
// auth_required again with a fresh link, and the call fails with a message
// the model and the user read. A callback with a bad state is a page that
// says so, and stores nothing.
func TestMCPOAuthRemoteServer(t *testing.T) {
	t.Parallel()
	remote := startOAuthRemote(t)
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"remote":{"url":"`+remote.url+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr, db := freeAddr(t), filepath.Join(dir, "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake-model", "AGENTIK_MCP_CONFIG=" + mcp, "AGENTIK_SECRET_KEY=test-secret-key-0123456789"}
	p := start(t, addr, db, env...)

	ts := waitToolState(t, p, "remote", agent.ToolServerAuthRequired)
	link, err := url.Parse(ts.SignInURL)
	if err != nil || !strings.HasPrefix(ts.SignInURL, remote.auth+"/authorize?") {
		t.Fatalf("sign_in_url %q, want the authorization server's /authorize", ts.SignInURL)
	}
	q := link.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != remote.url || q.Get("client_id") == "" ||
		q.Get("redirect_uri") != "http://"+addr+"/agentik/oauth/callback" || q.Get("state") == "" {
		t.Errorf("the link lacks PKCE, the resource, the client or the redirect: %s", q)
	}

	// Sign in through the link in the UI, in headless Chromium.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800))
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	bctx, cancelT := context.WithTimeout(bctx, time.Minute)
	defer cancelT()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(p.url("/")),
		chromedp.WaitVisible(chromedp.CSS(`#tool-servers summary`)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("tool-servers").open = true`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tool-sign-in"]`)),
	); err != nil {
		t.Fatalf("the sidebar's sign-in link: %v\nlogs:\n%s", err, p.logs)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx,
		// The link opens a tab of its own; here the same tab follows it.
		chromedp.Evaluate[chromedp.Void](`(() => { const a = document.querySelector('[data-testid="tool-sign-in"]'); a.removeAttribute("target"); setTimeout(() => a.click(), 0) })()`),
		acrossNavigations(`location.pathname === "/agentik/oauth/callback" && document.body.innerText.includes("signed in to the tool server remote")`),
	); err != nil {
		body, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
		loc, _ := chromedp.Run(bctx, chromedp.Location())
		t.Fatalf("sign in through the sidebar's link: %v\nat %s: %s\nlogs:\n%s\nremote:\n%s", err, loc, body, p.logs, remote.logs)
	}
	if err := os.WriteFile(filepath.Join(os.TempDir(), "agentik-mcpoauth-sidebar.png"), shot, 0o600); err != nil {
		t.Log(err)
	}
	remote.next(t, "token")
	waitToolState(t, p, "remote", agent.ToolServerReady)
	if res := greet(t, p, fake, "alice"); res.IsError || !strings.Contains(res.Result, "Hello, alice!") {
		t.Fatalf("the call after signing in: %+v", res)
	}
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("access_token")) || bytes.Contains(b, []byte("refresh_token")) {
			t.Errorf("%s holds the token in the clear", f)
		}
	}

	// A restart keeps the sign-in.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	p = start(t, addr, db, env...)
	waitToolState(t, p, "remote", agent.ToolServerReady)
	if res := greet(t, p, fake, "bob"); res.IsError || !strings.Contains(res.Result, "Hello, bob!") {
		t.Fatalf("the call after a restart: %+v\nlogs:\n%s", res, p.logs)
	}
	remote.quiet(t) // no new token, no refresh: the stored one

	// The server expires the access token: agentik refreshes it.
	remote.signal(t, syscall.SIGUSR1, "expired")
	if res := greet(t, p, fake, "carol"); res.IsError || !strings.Contains(res.Result, "Hello, carol!") {
		t.Fatalf("the call after the token expired: %+v\nlogs:\n%s", res, p.logs)
	}
	remote.next(t, "refreshed")

	// The server forgets the refresh token too: a sign-in again. The open
	// tab gets its own fresh link live (a tool_server event, then list_tools).
	if err := chromedp.Do(bctx,
		chromedp.Navigate(p.url("/")),
		chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="tool-server"][data-name="remote"]')?.dataset.state === "ready" && document.getElementById("connection")?.dataset.state === "online"`,
			chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("the sidebar shows remote ready: %v", err)
	}
	remote.signal(t, syscall.SIGUSR2, "revoked")
	res := greet(t, p, fake, "dave")
	if !res.IsError || !strings.Contains(res.Result, `tool server "remote" needs you to sign in`) || !strings.Contains(res.Result, remote.auth+"/authorize?") {
		t.Fatalf("the call after the tokens were revoked: %+v", res)
	}
	again := waitToolState(t, p, "remote", agent.ToolServerAuthRequired)
	if again.SignInURL == "" || again.SignInURL == ts.SignInURL {
		t.Errorf("no fresh link: %q", again.SignInURL)
	}
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`document.querySelector('[data-testid="tool-server"][data-name="remote"] [data-testid="tool-sign-in"]')?.href.startsWith("`+remote.auth+`/authorize?")`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the open tab got no fresh sign-in link: %v", err)
	}

	// A callback with a bad state: a page that says so; nothing stored.
	for _, state := range []string{"not-a-state", url.Values{"state": {again.SignInURL}}.Encode()} {
		resp, err := http.Get(p.url("/agentik/oauth/callback?code=x&state=" + url.QueryEscape(state)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "not valid") {
			t.Errorf("bad state %q: %d %s", state, resp.StatusCode, b)
		}
	}
	if s := waitToolState(t, p, "remote", agent.ToolServerAuthRequired); s.SignInURL == "" {
		t.Errorf("after bad callbacks: %+v", s)
	}
	remote.quiet(t)
}

// acrossNavigations waits for expr while the page navigates (a poll whose
// page went away starts again on the next one).
func acrossNavigations(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
			if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "context") && !strings.Contains(err.Error(), "navigated") && !strings.Contains(err.Error(), "node") {
				return err
			}
		}
	})
}
