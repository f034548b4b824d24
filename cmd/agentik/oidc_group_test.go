package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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
	me, status, page, _ = oidcSession(t, o, login)
	return me, status, page
}

// oidcSession is oidcTry that also returns the HTTP client holding the
// session (its cookie jar), to call agentik as the person.
func oidcSession(t *testing.T, o oidcRig, login string) (me oidcMe, status int, page string, client *http.Client) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	agentik := "http://" + o.p.addr
	client = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
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
		return me, resp.StatusCode, body, client
	}
	resp, body := do(client.Get(agentik + "/agentik/me"))
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &me) != nil {
		t.Fatalf("/agentik/me with %s's session: %d %s", login, resp.StatusCode, body)
	}
	return me, http.StatusSeeOther, "", client
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

// TestOIDCGroupsClaim: the groups claim of the real provider is synced at
// each sign-in: its groups are made (source oidc) with the person in them,
// an agent shared with one is seen by its members only (REST and /v1,
// with the OIDC session), a group the claim no longer names is left at the
// next sign-in, and a membership an admin made stays.
func TestOIDCGroupsClaim(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "groups.json")
	claims := func(v string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	claims(`{"dora":["eng","staff"],"erin":["staff"]}`)
	o := startOIDC(t, "OIDC_GROUPS_FILE="+file)
	dora, _, _, doraC := oidcSession(t, o, "dora")
	erin, _, _, erinC := oidcSession(t, o, "erin")

	type group struct {
		ID, Name, Source string
		Members          []string
	}
	groups := func() map[string]group {
		var res struct{ Groups []group }
		must(t, adminKey, "GET", o.p.url("/agentik/groups"), "", &res)
		m := map[string]group{}
		for _, g := range res.Groups {
			m[g.Name] = g
		}
		return m
	}
	gs := groups()
	if g := gs["eng"]; g.Source != "oidc" || !slices.Equal(g.Members, []string{dora.ID}) {
		t.Errorf("eng after the sign-ins: %+v", g)
	}
	if g := gs["staff"]; g.Source != "oidc" || len(g.Members) != 2 {
		t.Errorf("staff after the sign-ins: %+v", g)
	}
	must(t, adminKey, "POST", o.p.url("/agentik/agents"), `{"slug":"engonly","name":"Eng only","visibility":"group","groups":["`+gs["eng"].ID+`"]}`, nil)
	must(t, adminKey, "POST", o.p.url("/agentik/groups"), `{"name":"ops","members":["`+erin.ID+`"]}`, nil)
	seen := func(c *http.Client) (rest, models bool) {
		t.Helper()
		get := func(path string) string {
			resp, err := c.Get(o.p.url(path))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		return strings.Contains(get("/agentik/agents"), `"slug":"engonly"`), strings.Contains(get("/v1/models"), `"agent/engonly"`)
	}
	if rest, models := seen(doraC); !rest || !models {
		t.Errorf("dora (eng in her claim) sees the agent: REST %v, /v1 %v; want both", rest, models)
	}
	if rest, models := seen(erinC); rest || models {
		t.Errorf("erin (not in eng) sees the agent: REST %v, /v1 %v; want neither", rest, models)
	}

	// The claims change: dora is out of eng at her next sign-in; erin's
	// membership of ops, an admin's, stays.
	claims(`{"dora":["staff"],"erin":[]}`)
	_, _, _, doraC = oidcSession(t, o, "dora")
	_, _, _, _ = oidcSession(t, o, "erin")
	gs = groups()
	if g := gs["eng"]; len(g.Members) != 0 {
		t.Errorf("eng after dora's claim left it: %+v", g)
	}
	if g := gs["staff"]; !slices.Equal(g.Members, []string{dora.ID}) {
		t.Errorf("staff after erin's claim left it: %+v", g)
	}
	if g := gs["ops"]; !slices.Equal(g.Members, []string{erin.ID}) {
		t.Errorf("ops (an admin's) after erin's sign-in: %+v", g)
	}
	if rest, models := seen(doraC); rest || models {
		t.Errorf("dora, out of eng, sees the agent: REST %v, /v1 %v", rest, models)
	}
	var audit struct {
		Entries []struct{ Actor, Target string }
	}
	must(t, adminKey, "GET", o.p.url("/agentik/audit?action=group_memberships_synced"), "", &audit)
	if len(audit.Entries) != 4 {
		t.Errorf("the syncs in the audit log: %+v, want 4 (two sign-ins each that changed memberships)", audit.Entries)
	}
}
