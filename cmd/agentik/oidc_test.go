package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// oidcRig is the real binary configured with a real OpenID provider
// (node-oidc-provider, started here) and the fake model.
type oidcRig struct {
	p      *proc
	issuer string
	fake   *llmtest.Server
	env    []string // agentik's
	db     string
}

// startOIDC starts the provider and agentik with env; the entries of env
// that start with OIDC_ are the provider's (testdata/oidc_provider.mjs).
func startOIDC(t *testing.T, env ...string) oidcRig {
	t.Helper()
	var provEnv []string
	env = slices.DeleteFunc(slices.Clone(env), func(e string) bool {
		if strings.HasPrefix(e, "OIDC_") {
			provEnv = append(provEnv, e)
			return true
		}
		return false
	})
	addr := freeAddr(t)
	provAddr := freeAddr(t)
	_, port, _ := strings.Cut(provAddr, ":")
	cmd := exec.Command("node", filepath.Join("testdata", "oidc_provider.mjs"), port, "http://"+addr+"/auth/oidc/callback")
	cmd.Dir = "."
	cmd.Env = append(os.Environ(), provEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var ready struct{ Issuer string }
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil {
		t.Fatalf("the OpenID provider did not start: %v %q\n%s", err, line, logs.String())
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	env = append([]string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_API_KEYS=" + adminKey,
		"AGENTIK_OIDC_ISSUER=" + ready.Issuer, "AGENTIK_OIDC_CLIENT_ID=agentik", "AGENTIK_OIDC_CLIENT_SECRET=agentik-secret",
		"AGENTIK_OIDC_NAME=TestID"}, env...)
	db := filepath.Join(t.TempDir(), "agentik.db")
	return oidcRig{p: start(t, addr, db, env...), issuer: ready.Issuer, fake: fake, env: env, db: db}
}

func (o oidcRig) users(t *testing.T) map[string]string {
	t.Helper()
	var res struct {
		Users []struct{ Email, Role string }
	}
	must(t, adminKey, "GET", o.p.url("/agentik/users"), "", &res)
	m := map[string]string{}
	for _, u := range res.Users {
		m[u.Email] = u.Role
	}
	return m
}

// TestOIDCSignInThroughTheBrowser: headless Chromium signs in at a real
// OpenID provider (code + PKCE, state, nonce), lands in the chat, sends a
// message that is answered, keeps the session over a reload, and signing
// out ends it.
func TestOIDCSignInThroughTheBrowser(t *testing.T) {
	t.Parallel()
	o := startOIDC(t, "AGENTIK_ADMINS=boss@example.com")
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")), chromedp.Flag("disable-dev-shm-usage", true))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()
	fail := func(step string, err error) {
		t.Helper()
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s: %v\nat %s: %s\nagentik logs:\n%s", step, err, loc, body, o.p.logs)
	}
	poll := acrossNavigations
	if err := chromedp.Do(ctx,
		chromedp.Navigate(o.p.url("/")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login-oidc"]`)),
	); err != nil {
		fail("the sign-in page", err)
	}
	if label, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid="login-oidc"]`))); label != "Sign in with TestID" {
		t.Errorf("the button says %q", label)
	}
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`setTimeout(() => document.querySelector('[data-testid="login-oidc"]').click(), 0)`),
		// The provider's own login and consent.
		poll(`location.origin === "`+o.issuer+`" && !!document.querySelector('input[name="login"]')`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('input[name="login"]').value = "carol"; document.querySelector('input[name="password"]').value = "any password"`),
		chromedp.Evaluate[chromedp.Void](`setTimeout(() => document.querySelector('button[type="submit"]').click(), 0)`),
		poll(`!document.querySelector('input[name="login"]') && !!document.querySelector("button.login-submit")`),
		chromedp.Evaluate[chromedp.Void](`setTimeout(() => document.querySelector("button.login-submit").click(), 0)`),
		// Back in agentik's chat.
		poll(`location.origin === "http://`+o.p.addr+`" && location.pathname === "/" && document.body.dataset.ready === "true" && document.getElementById("connection")?.dataset.state === "online"`),
	); err != nil {
		fail("sign in at the provider", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#prompt"), "hello from carol\r"),
		poll(`[...document.querySelectorAll('#messages [data-type="assistant_message"]')].length === 1`),
	); err != nil {
		fail("a message answered", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Reload(),
		poll(`location.pathname.startsWith("/c/") && document.querySelectorAll('#messages [data-type="assistant_message"]').length === 1`),
	); err != nil {
		fail("the session after a reload", err)
	}
	if got := o.users(t); got["carol@example.com"] != "member" || got["boss@example.com"] != "" {
		t.Errorf("users after carol signed in: %v", got)
	}
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`fetch("/logout", {method: "POST"}).then(() => null)`, chromedp.EvalAwaitPromise),
		chromedp.Navigate(o.p.url("/")),
		poll(`location.pathname === "/login" && !!document.querySelector('[data-testid="login-oidc"]')`),
	); err != nil {
		fail("sign out", err)
	}
}

var formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)

// TestOIDCRefusesTamperedStateAndReplayedCode drives the flow with an
// HTTP client: a state that is not the one agentik sent is refused, and a
// code used once is refused the second time; neither creates a user.
func TestOIDCRefusesTamperedStateAndReplayedCode(t *testing.T) {
	t.Parallel()
	o := startOIDC(t, "AGENTIK_ADMINS=dave@example.com")
	jar, _ := cookiejar.New(nil)
	agentik := "http://" + o.p.addr
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), agentik) {
			return http.ErrUseLastResponse // stop at agentik's callback
		}
		return nil
	}}
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	post := func(u string, form url.Values) *http.Response {
		t.Helper()
		resp, err := client.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// login → a redirect to the provider.
	first, err := (&http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(agentik + "/auth/oidc/login?next=/")
	if err != nil {
		t.Fatal(err)
	}
	first.Body.Close()
	resp := first
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("code_challenge_method") != "S256" || loc.Query().Get("state") == "" || loc.Query().Get("nonce") == "" {
		t.Fatalf("login: %d to %s: want the provider, with PKCE (S256), state and nonce", resp.StatusCode, loc)
	}
	flowCookie := jar.Cookies(&url.URL{Scheme: "http", Host: o.p.addr, Path: "/auth/oidc/"})
	for _, c := range flowCookie {
		c.Path = "/auth/oidc/" // as agentik set it (the jar returns name and value only)
	}

	// A tampered state is refused before anything is asked of the provider.
	resp, body := get(agentik + "/auth/oidc/callback?code=whatever&state=tampered")
	if resp.StatusCode != 400 || !strings.Contains(body, "state") {
		t.Errorf("tampered state: %d %s", resp.StatusCode, body)
	}
	jar.SetCookies(&url.URL{Scheme: "http", Host: o.p.addr, Path: "/auth/oidc/"}, flowCookie)

	resp, page := get(loc.String())
	m := formAction.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the provider's login page: %d %s", resp.StatusCode, page)
	}
	base := resp.Request.URL
	action, _ := base.Parse(m[1])
	resp = post(action.String(), url.Values{"prompt": {"login"}, "login": {"dave"}, "password": {"x"}})
	_, page = get(resp.Request.URL.String())
	if m = formAction.FindStringSubmatch(page); m == nil {
		t.Fatalf("the provider's consent page: %s", page)
	}
	action, _ = resp.Request.URL.Parse(m[1])
	resp = post(action.String(), url.Values{"prompt": {"consent"}})
	callback := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || !strings.HasPrefix(callback, agentik+"/auth/oidc/callback?") {
		t.Fatalf("after consent: %d to %q", resp.StatusCode, callback)
	}
	if len(o.users(t)) != 1 {
		t.Errorf("users before the callback: %v", o.users(t))
	}

	resp, body = get(callback)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	if got := o.users(t); got["dave@example.com"] != "admin" || len(got) != 2 {
		t.Errorf("users after dave signed in: %v (AGENTIK_ADMINS names him)", got)
	}
	var me struct{ Email, Role string }
	resp, body = get(agentik + "/agentik/me")
	if json.Unmarshal([]byte(body), &me) != nil || me.Email != "dave@example.com" || me.Role != "admin" {
		t.Errorf("/agentik/me with the session: %d %s", resp.StatusCode, body)
	}

	// The same callback again: the browser's sign-in is over.
	resp, body = get(callback)
	if resp.StatusCode != 400 || !strings.Contains(body, "no sign-in is in progress") {
		t.Errorf("the callback again: %d %s", resp.StatusCode, body)
	}
	// With the flow's cookie put back, the provider refuses the used code.
	jar.SetCookies(&url.URL{Scheme: "http", Host: o.p.addr, Path: "/auth/oidc/"}, flowCookie)
	resp, body = get(callback)
	if resp.StatusCode != 401 || !strings.Contains(body, "refused the code") {
		t.Errorf("a replayed code: %d %s", resp.StatusCode, body)
	}
	if len(o.users(t)) != 2 {
		t.Errorf("a refused sign-in created a user: %v", o.users(t))
	}

	// Each refusal is in the audit log with its reason, and no secret:
	// neither the code, the state, nor the client secret.
	var audit struct {
		Entries []struct {
			Actor   string
			Details struct{ Method, Reason, Message string }
		}
	}
	must(t, adminKey, "GET", o.p.url("/agentik/audit?action=sign_in_failed"), "", &audit)
	var reasons []string
	for _, e := range audit.Entries {
		if e.Details.Method == "oidc" && e.Actor == "" && e.Details.Message != "" {
			reasons = append(reasons, e.Details.Reason)
		}
	}
	if fmt.Sprint(reasons) != "[state_mismatch no_flow code_refused]" {
		t.Errorf("the audit log's failed OIDC sign-ins: %v (%+v)", reasons, audit.Entries)
	}
	cb, _ := url.Parse(callback)
	_, export := call(t, adminKey, "GET", o.p.url("/agentik/audit/export"), "")
	for _, secret := range []string{cb.Query().Get("code"), cb.Query().Get("state"), "agentik-secret"} {
		if bytes.Contains(export, []byte(secret)) {
			t.Errorf("the audit export holds %q", secret)
		}
	}
}

// TestTrustedUserHeader: a reverse proxy in AGENTIK_TRUSTED_PROXIES names
// the user in AGENTIK_TRUSTED_USER_HEADER; from any other peer the header
// is ignored; without trusted proxies the start fails.
func TestTrustedUserHeader(t *testing.T) {
	t.Parallel()
	me := func(p *proc, email string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", p.url("/agentik/me"), nil)
		req.Header.Set("X-Forwarded-Email", email)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	trusted := start(t, freeAddr(t), filepath.Join(t.TempDir(), "a.db"), "AGENTIK_TRUSTED_USER_HEADER=X-Forwarded-Email",
		"AGENTIK_TRUSTED_PROXIES=127.0.0.1/32", "AGENTIK_ADMINS=erin@example.com")
	if code, body := me(trusted, "frank@example.com"); code != 200 || !strings.Contains(body, `"email":"frank@example.com"`) || !strings.Contains(body, `"role":"member"`) {
		t.Errorf("frank through the proxy: %d %s", code, body)
	}
	if code, body := me(trusted, "erin@example.com"); code != 200 || !strings.Contains(body, `"role":"admin"`) {
		t.Errorf("erin (AGENTIK_ADMINS) through the proxy: %d %s", code, body)
	}
	if code, _ := me(trusted, ""); code != 401 {
		t.Errorf("through the proxy without the header: %d, want 401", code)
	}
	other := start(t, freeAddr(t), filepath.Join(t.TempDir(), "b.db"), "AGENTIK_TRUSTED_USER_HEADER=X-Forwarded-Email",
		"AGENTIK_TRUSTED_PROXIES=10.0.0.0/8")
	if code, body := me(other, "frank@example.com"); code != 401 {
		t.Errorf("the header from a peer that is no trusted proxy: %d %s, want 401", code, body)
	}
	err := run(t.Context(), []string{"--db", "sqlite:" + filepath.Join(t.TempDir(), "c.db")},
		func(k string) string {
			if k == "AGENTIK_TRUSTED_USER_HEADER" {
				return "X-Forwarded-Email"
			}
			return ""
		}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "AGENTIK_TRUSTED_PROXIES") {
		t.Errorf("the header without trusted proxies: %v", err)
	}
}
