package tool

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/secret"
	"github.com/agentik/agentik/internal/testwait"
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
	creds := newMemCredentials()
	a, b, evA, evB := twoInstances(t, mcpURL, creds, creds, memLock(nil))
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
	state, code := follow(t, links[0], testRedirect)
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

// heldCredentials is one instance's view of the shared credentials whose
// saves of a user's token wait while a gate is set.
type heldCredentials struct {
	CredentialStore
	gate atomic.Pointer[chan struct{}]
}

func (h *heldCredentials) SetCredential(ctx context.Context, server, subject string, data []byte) error {
	if g := h.gate.Load(); g != nil && subject != "" {
		<-*g
	}
	return h.CredentialStore.SetCredential(ctx, server, subject, data)
}

// TestOAuthRefreshAcrossInstances: the server expires the access token
// (its refresh tokens rotate: each works once). A refreshes it and,
// before its new token is stored, B's call is refused too: B waits for
// A's refresh and uses its token instead of spending the refresh token a
// second time, which the server would refuse and after which B would
// delete the user's token and ask for a sign-in again.
func TestOAuthRefreshAcrossInstances(t *testing.T) {
	mcpURL, _, remote, proc := oauthExample(t)
	creds := newMemCredentials()
	held := &heldCredentials{CredentialStore: creds}
	var refreshLocks atomic.Int32 // refresh locks asked for, held or waited for
	a, b, evA, evB := twoInstances(t, mcpURL, held, creds, memLock(func(name string) {
		if strings.HasPrefix(name, "mcp-oauth-refresh ") {
			refreshLocks.Add(1)
		}
	}))
	ctx := t.Context()
	state, code := follow(t, a.ServersFor(ctx)[0].SignInURL, testRedirect)
	if _, err := a.CompleteSignIn(ctx, state, code, nil); err != nil {
		t.Fatal(err)
	}
	said(t, remote, "token")
	waitChange(t, a, evA, "remote", agent.ToolServerReady)
	waitChange(t, b, evB, "remote", agent.ToolServerReady)

	gate := make(chan struct{})
	held.gate.Store(&gate) // A's refreshed token waits before it is stored
	if err := proc.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	said(t, remote, "expired")
	call := func(m *Manager, who string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := m.Call(ctx, "remote__greet", `{"name":"`+who+`"}`)
			done <- err
		}()
		return done
	}
	doneA := call(a, "a")
	said(t, remote, "refreshed") // by A, whose new token is not stored yet
	doneB := call(b, "b")
	var errB error
	finishedB := false
	testwait.For(t, "B to wait for A's refresh (or to finish)", func() bool {
		select {
		case errB = <-doneB:
			finishedB = true
			return true
		default:
			return refreshLocks.Load() >= 2
		}
	})
	close(gate)
	if err := <-doneA; err != nil {
		t.Errorf("A's call: %v", err)
	}
	if !finishedB {
		errB = <-doneB
	}
	if errB != nil {
		t.Errorf("B's call while A refreshed the token: %v", errB)
	}
	select {
	case ev := <-remote:
		t.Errorf("the server said %q: one refresh was enough", ev)
	default:
	}
	if _, err := b.Call(ctx, "remote__greet", `{"name":"b"}`); err != nil {
		t.Errorf("B's next call: %v", err)
	}
}

// testRedirect is agentik's callback in these tests: nothing listens there
// (follow stops at it).
const testRedirect = "http://127.0.0.1:9/agentik/oauth/callback"

// twoInstances starts two Managers with the remote server at mcpURL that
// share a lock and the credentials (each through its own view: credsA,
// credsB), as agentik's instances on one PostgreSQL do, each telling the
// other of a sign-in; it returns once both are auth_required.
func twoInstances(t *testing.T, mcpURL string, credsA, credsB CredentialStore, lock func(context.Context, string) (func(), error)) (a, b *Manager, evA, evB *events) {
	t.Helper()
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"remote":{"url":"`+mcpURL+`","oauth":{}}}}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	box := secret.Random()
	tell := func(to **Manager) func(server, user string) {
		return func(server, user string) { (*to).SignedIn(server, user) }
	}
	evA, evB = newEvents(), newEvents()
	a = start(t, cfg, Options{OnChange: evA.on, OAuth: &OAuthOptions{Credentials: credsA, Box: box, RedirectURL: testRedirect, Lock: lock, Tell: tell(&b)}})
	b = start(t, cfg, Options{OnChange: evB.on, OAuth: &OAuthOptions{Credentials: credsB, Box: box, RedirectURL: testRedirect, Lock: lock, Tell: tell(&a)}})
	waitChange(t, a, evA, "remote", agent.ToolServerAuthRequired)
	waitChange(t, b, evB, "remote", agent.ToolServerAuthRequired)
	return a, b, evA, evB
}

// memLock is a lock by name, as the database's (store.Lead) among the
// instances; asked, when set, hears of each name asked for before it is
// held.
func memLock(asked func(name string)) func(context.Context, string) (func(), error) {
	var locks sync.Map // name → *sync.Mutex
	return func(_ context.Context, name string) (func(), error) {
		if asked != nil {
			asked(name)
		}
		mu, _ := locks.LoadOrStore(name, &sync.Mutex{})
		mu.(*sync.Mutex).Lock()
		return mu.(*sync.Mutex).Unlock, nil
	}
}
