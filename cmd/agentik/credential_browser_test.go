package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// TestBrowserCredentials: on the real binary with a per-user tool server
// (mcp.json "auth": "per_user"), Ann, signed in in headless Chromium,
// finds the server on her people page with no credential, adds her
// secret, replaces it and deletes it there; the page never shows a secret
// back, each tool call carries the secret she set last, and Bob's page
// shows the server without one.
func TestBrowserCredentials(t *testing.T) {
	t.Parallel()
	mcpSrv := echoAuthMCP(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(conf, []byte(`{"mcpServers":{"gh":{"url":"`+mcpSrv.URL+`/mcp","auth":"per_user","headers":{"Authorization":"Bearer ${user.secret}"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTeam(t, filepath.Join(dir, "agentik.db"), "AGENTIK_MCP_CONFIG="+conf, "AGENTIK_SECRET_KEY=a-secret-key-of-the-test")
	p, ann := tm.p, tm.ann.key
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + ann})

	// whoami runs the per-user tool in a new chat of key's and returns what
	// the server received.
	whoami := func(key string) string {
		t.Helper()
		id := tm.converse(t, key, "[[tool=gh__whoami]]")
		var res string
		testwait.For(t, "the tool result of "+id, func() bool {
			var hist struct{ Messages []agent.Message }
			must(t, key, "GET", p.url("/agentik/conversations/"+id+"/messages"), "", &hist)
			for _, m := range hist.Messages {
				if m.Type == agent.MessageToolResult {
					res = m.Result
					return true
				}
			}
			return false
		})
		return res
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")), chromedp.Flag("disable-dev-shm-usage", true))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%s: %v\npage: %s\nagentik logs:\n%s", name, err, body, p.logs)
		}
	}
	row := `document.querySelector('[data-testid="credential"][data-server="gh"]')`
	save := func(secret string) {
		t.Helper()
		step("save "+secret,
			// The row is marked, then waited for as rendered again after the request.
			chromedp.Evaluate[chromedp.Void](`(() => { `+row+`.dataset.stale = "1"; const i = `+row+`.querySelector('[data-testid="credential-secret"]'); i.value = "`+secret+`"; setTimeout(() => `+row+`.querySelector('[data-testid="credential-save"]').click(), 0); })()`),
			acrossNavigations(`!`+row+`?.dataset.stale && `+row+`?.dataset.set === 'true' && `+row+`.querySelector('[data-testid="credential-save"]').textContent.trim() === 'Replace'`))
		if html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(html, secret) {
			t.Errorf("the page shows the secret %q back", secret)
		}
	}

	step("sign in",
		chromedp.Navigate(p.url("/login")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login-key"]`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="login-key"]').value = "`+ann+`"; setTimeout(() => document.querySelector('form[action="/login"] button[type="submit"]').click(), 0)`),
		acrossNavigations(`location.pathname === "/" && document.body.dataset.ready === "true"`),
		chromedp.Navigate(p.url("/people")),
		acrossNavigations(`document.body.dataset.conn === 'online' && `+row+`?.dataset.set === 'false'`))
	if state, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid="credential"][data-server="gh"] [data-testid="credential-state"]`))); state != "not set" {
		t.Errorf("gh's state before: %q", state)
	}

	save("ann-token-1")
	if got := whoami(ann); got != "auth=Bearer ann-token-1" {
		t.Fatalf("ann's call after she added her secret: %q", got)
	}
	save("ann-token-2")
	if got := whoami(ann); got != "auth=Bearer ann-token-2" {
		t.Fatalf("ann's call after she replaced it: %q", got)
	}
	_, list := call(t, ann, "GET", p.url("/agentik/credentials"), "")
	if !strings.Contains(string(list), `"server":"gh"`) || strings.Contains(string(list), "ann-token") {
		t.Errorf("ann's credentials: %s", list)
	}
	_, bobs := call(t, tm.bob.key, "GET", p.url("/agentik/credentials"), "")
	if strings.Contains(string(bobs), `"gh"`) {
		t.Errorf("bob's credentials: %s", bobs)
	}

	step("delete",
		chromedp.Evaluate[chromedp.Void](`(() => { `+row+`.dataset.stale = "1"; setTimeout(() => `+row+`.querySelector('[data-testid="credential-delete"]').click(), 0); })()`),
		acrossNavigations(`!`+row+`?.dataset.stale && `+row+`?.dataset.set === 'false' && !`+row+`.querySelector('[data-testid="credential-delete"]')`))
	_, list = call(t, ann, "GET", p.url("/agentik/credentials"), "")
	if strings.Contains(string(list), `"gh"`) {
		t.Errorf("ann's credentials after the delete: %s", list)
	}
}
