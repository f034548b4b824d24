package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestInstancesShareAnMCPSignIn: two binaries on one PostgreSQL behind
// one public callback (AGENTIK_MCP_OAUTH_REDIRECT_URL, as behind a load
// balancer), with the MCP SDK's OAuth example server in their mcp.json.
// Both are auth_required with links of one registered client; the link
// shown by A is followed and its callback lands on B (the balancer's
// choice); A, told over the database (the mcp-signin broadcast), becomes
// ready without a sign-in of its own, and its turn calls the tool with
// the token B stored.
func TestInstancesShareAnMCPSignIn(t *testing.T) {
	t.Parallel()
	remote := startOAuthRemote(t)
	dsn := freshSchema(t)
	mcp := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"remote":{"url":"`+remote.url+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	const public = "http://127.0.0.1:9/agentik/oauth/callback" // the balancer's address: nothing listens there
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake-model", "AGENTIK_MCP_CONFIG=" + mcp,
		"AGENTIK_SECRET_KEY=test-secret-key-0123456789", "AGENTIK_MCP_OAUTH_REDIRECT_URL=" + public}
	a := startDSN(t, dsn, env...)
	b := startDSN(t, dsn, env...)
	la := waitToolState(t, a, "remote", agent.ToolServerAuthRequired).SignInURL
	lb := waitToolState(t, b, "remote", agent.ToolServerAuthRequired).SignInURL
	ua, errA := url.Parse(la)
	ub, errB := url.Parse(lb)
	if errA != nil || errB != nil || ua.Query().Get("client_id") == "" || ua.Query().Get("client_id") != ub.Query().Get("client_id") {
		t.Fatalf("sign-in links of two instances: %q and %q, want one registered client", la, lb)
	}
	if ua.Query().Get("redirect_uri") != public {
		t.Fatalf("A's link returns to %q, want the public callback %q", ua.Query().Get("redirect_uri"), public)
	}

	// The person follows A's link; the balancer sends the callback to B.
	c := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), public) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := c.Get(la)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.String(), public) {
		t.Fatalf("the consent ended at %d %q, want a redirect to %s", resp.StatusCode, resp.Header.Get("Location"), public)
	}
	resp, err = http.Get(b.url("/agentik/oauth/callback?" + back.RawQuery))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("A's callback on B: %d\nB's logs:\n%s", resp.StatusCode, b.logs)
	}
	remote.next(t, "token")
	waitToolState(t, b, "remote", agent.ToolServerReady)
	waitToolState(t, a, "remote", agent.ToolServerReady)
	if res := greet(t, a, fake, "alice"); res.IsError || !strings.Contains(res.Result, "Hello, alice!") {
		t.Fatalf("A's call after the sign-in completed on B: %+v\nA's logs:\n%s", res, a.logs)
	}
	remote.quiet(t) // A used B's token: no second exchange
}
