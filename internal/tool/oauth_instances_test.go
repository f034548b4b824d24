package tool

import (
	"context"
	"net/url"
	"sync"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/secret"
)

// TestOAuthAcrossInstances: two instances (Managers) share the sealed
// credentials and a lock, as agentik's instances on one PostgreSQL do,
// before a server (the MCP SDK's OAuth example) with dynamic client
// registration. Sign-in links made on both carry one registered client,
// so a link made on A completes on B; and once the user signed in on B,
// A's supervisor, told of it, leaves auth_required and calls the tool
// with that token.
func TestOAuthAcrossInstances(t *testing.T) {
	mcpURL, _, remote, _ := oauthExample(t)
	const redirect = "http://127.0.0.1:9/agentik/oauth/callback"
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"remote":{"url":"`+mcpURL+`","oauth":{}}}}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	creds := &memCredentials{rows: map[[2]string][]byte{}, seq: map[[2]string]int{}}
	box := secret.Random()
	var locks sync.Map // name → *sync.Mutex: the database's lock
	lock := func(_ context.Context, name string) (func(), error) {
		mu, _ := locks.LoadOrStore(name, &sync.Mutex{})
		mu.(*sync.Mutex).Lock()
		return mu.(*sync.Mutex).Unlock, nil
	}
	var a, b *Manager
	tell := func(to **Manager) func(server, user string) {
		return func(server, user string) { (*to).SignedIn(server, user) }
	}
	evA, evB := newEvents(), newEvents()
	a = start(t, cfg, Options{OnChange: evA.on, OAuth: &OAuthOptions{Credentials: creds, Box: box, RedirectURL: redirect, Lock: lock, Tell: tell(&b)}})
	b = start(t, cfg, Options{OnChange: evB.on, OAuth: &OAuthOptions{Credentials: creds, Box: box, RedirectURL: redirect, Lock: lock, Tell: tell(&a)}})
	waitChange(t, a, evA, "remote", agent.ToolServerAuthRequired)
	waitChange(t, b, evB, "remote", agent.ToolServerAuthRequired)
	ctx := t.Context()

	// Links made on both instances at once: one client.
	links := make([]string, 2)
	var wg sync.WaitGroup
	for i, m := range []*Manager{a, b} {
		wg.Go(func() { links[i] = m.ServersFor(ctx)[0].SignInURL })
	}
	wg.Wait()
	la, _ := url.Parse(links[0])
	lb, _ := url.Parse(links[1])
	if ca, cb := la.Query().Get("client_id"), lb.Query().Get("client_id"); ca == "" || ca != cb {
		t.Fatalf("sign-in links on two instances name clients %q and %q, want one", ca, cb)
	}
	// A's link, completed on B.
	state, code := follow(t, links[0], redirect)
	if _, err := b.CompleteSignIn(ctx, state, code, nil); err != nil {
		t.Fatalf("a sign-in link made on A, completed on B: %v", err)
	}
	said(t, remote, "token")
	waitChange(t, b, evB, "remote", agent.ToolServerReady)
	// A was told, and uses the token too.
	waitChange(t, a, evA, "remote", agent.ToolServerReady)
	if _, err := a.Call(ctx, "remote__greet", `{"name":"a"}`); err != nil {
		t.Fatalf("A's call after the sign-in on B: %v", err)
	}
}
