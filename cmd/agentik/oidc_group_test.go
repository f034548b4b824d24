package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// oidcMe is an account as /agentik/me shows it.
type oidcMe struct{ ID, Name, Email, Role string }

// oidcSignIn signs login in at o's provider with an HTTP client (agentik's
// login, the provider's login and consent forms, agentik's callback) and
// returns the account agentik made, as /agentik/me shows it with the
// session.
func oidcSignIn(t *testing.T, o oidcRig, login string) oidcMe {
	t.Helper()
	me, status, body := oidcTry(t, o, login)
	if status != http.StatusSeeOther {
		t.Fatalf("the callback for %s: %d %s", login, status, body)
	}
	return me
}

// oidcTry is oidcSignIn that returns the callback's status and page when
// agentik refuses the sign-in.
func oidcTry(t *testing.T, o oidcRig, login string) (me oidcMe, status int, page string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	agentik := "http://" + o.p.addr
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), agentik) {
			return http.ErrUseLastResponse // stop at agentik's redirects
		}
		return nil
	}}
	do := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// agentik's login redirects to the provider's login form; then its
	// consent form.
	resp, page := do(client.Get(agentik + "/auth/oidc/login?next=/"))
	for _, form := range []url.Values{{"prompt": {"login"}, "login": {login}, "password": {"x"}}, {"prompt": {"consent"}}} {
		m := formAction.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no form on the provider's page: %d %s", resp.StatusCode, page)
		}
		action, _ := resp.Request.URL.Parse(m[1])
		resp, _ = do(client.PostForm(action.String(), form))
		if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, agentik+"/auth/oidc/callback?") {
			break
		}
		resp, page = do(client.Get(resp.Request.URL.String()))
	}
	callback := resp.Header.Get("Location")
	if callback == "" {
		t.Fatalf("after consent: %d at %s: %s", resp.StatusCode, resp.Request.URL, page)
	}
	if resp, body := do(client.Get(callback)); resp.StatusCode != http.StatusSeeOther {
		return me, resp.StatusCode, body
	}
	resp, body := do(client.Get(agentik + "/agentik/me"))
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &me) != nil {
		t.Fatalf("/agentik/me with %s's session: %d %s", login, resp.StatusCode, body)
	}
	return me, http.StatusSeeOther, ""
}

// TestOIDCAdminGroup: with AGENTIK_OIDC_ADMIN_GROUP, a person whose ID
// token's groups claim (from the real provider) holds that group signs in
// as an admin; one without it signs in as a member.
func TestOIDCAdminGroup(t *testing.T) {
	t.Parallel()
	o := startOIDC(t, "AGENTIK_OIDC_ADMIN_GROUP=agentik-admins")
	if me := oidcSignIn(t, o, "ops-erin"); me.Email != "ops-erin@example.com" || me.Role != "admin" {
		t.Errorf("ops-erin (in agentik-admins): %+v, want an admin", me)
	}
	if me := oidcSignIn(t, o, "frank"); me.Email != "frank@example.com" || me.Role != "member" {
		t.Errorf("frank (in staff only): %+v, want a member", me)
	}
	if got := o.users(t); got["ops-erin@example.com"] != "admin" || got["frank@example.com"] != "member" {
		t.Errorf("users: %v", got)
	}
}
