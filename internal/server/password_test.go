package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// withSignup sets AGENTIK_SIGNUP.
func withSignup(mode string) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.Signup = mode }
}

// pwCall does a request with hdr (name, value pairs), checks its status
// and code, decodes a 2xx answer into out and returns the session cookie
// it set ("" for none).
func pwCall(t *testing.T, ts *testServer, method, path, body string, status int, code string, out any, hdr ...string) string {
	t.Helper()
	resp := ts.do(t, method, path, body, hdr...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, status)
	}
	if code != "" {
		var e struct{ Code, Message string }
		if json.Unmarshal(b, &e); e.Code != code || e.Message == "" {
			t.Fatalf("%s %s: %s, want code %s", method, path, b, code)
		}
	}
	if out != nil && status < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range resp.Cookies() {
		if c.Name == "agentik_session" && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

func cookie(v string) []string { return []string{"Cookie", "agentik_session=" + v} }

// formLogin posts the sign-in form with email and password and returns
// the status and session cookie.
func formLogin(t *testing.T, ts *testServer, email, pw string) (int, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(ts.URL+"/login", url.Values{"email": {email}, "password": {pw}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "agentik_session" {
			return resp.StatusCode, c.Value
		}
	}
	return resp.StatusCode, ""
}

// TestPasswordAccountsREST: the password routes' answers and refusals,
// each written nowhere when refused: sign-up by invitation only, a short
// password, an invite for another email, a used invite, a member's
// invite, a wrong current password, a reset that ends the old sessions.
func TestPasswordAccountsREST(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	bearer := []string{"Authorization", "Bearer " + admin}
	users := func() int {
		var us struct{ Users []agent.User }
		pwCall(t, ts, "GET", "/agentik/users", "", 200, "", &us, bearer...)
		return len(us.Users)
	}
	n0 := users()

	pwCall(t, ts, "POST", "/agentik/signup", `{"email":"ann@example.com","password":"long enough password"}`, 403, agent.CodeForbidden, nil)
	var inv struct{ Token, URL string }
	pwCall(t, ts, "POST", "/agentik/invites", `{"email":"ann@example.com","role":"boss"}`, 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "POST", "/agentik/invites", `{"email":"ann@example.com"}`, 201, "", &inv, bearer...)
	signup := func(email, pw string) string {
		return fmt.Sprintf(`{"token":%q,"email":%q,"password":%q,"name":"Ann"}`, inv.Token, email, pw)
	}
	pwCall(t, ts, "POST", "/agentik/signup", signup("ann@example.com", "short"), 400, agent.CodeBadRequest, nil)
	pwCall(t, ts, "POST", "/agentik/signup", signup("bob@example.com", "long enough password"), 400, agent.CodeBadRequest, nil)
	pwCall(t, ts, "POST", "/agentik/signup", `{"token":"nope","email":"ann@example.com","password":"long enough password"}`, 404, agent.CodeNotFound, nil)
	if n := users(); n != n0 {
		t.Fatalf("refused sign-ups made %d users", n-n0)
	}
	var ann agent.User
	s1 := pwCall(t, ts, "POST", "/agentik/signup", signup("ann@example.com", "long enough password"), 201, "", &ann)
	if s1 == "" || ann.Email != "ann@example.com" || ann.Role != agent.RoleMember || ann.Pending {
		t.Fatalf("signed up %+v, cookie %q", ann, s1)
	}
	pwCall(t, ts, "POST", "/agentik/signup", signup("ann2@example.com", "long enough password"), 404, agent.CodeNotFound, nil)
	var me agent.User
	pwCall(t, ts, "GET", "/agentik/me", "", 200, "", &me, cookie(s1)...)
	if me.ID != ann.ID {
		t.Fatalf("me = %+v", me)
	}
	// A member invites no one while sign-up is closed; a member resets no one.
	pwCall(t, ts, "POST", "/agentik/invites", `{}`, 403, agent.CodeForbidden, nil, cookie(s1)...)
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/reset", ``, 403, agent.CodeForbidden, nil, cookie(s1)...)

	// Her own change: the current password first.
	pwCall(t, ts, "PUT", "/agentik/me/password", `{"current":"not my password","new":"changed password one"}`, 403, agent.CodeForbidden, nil, cookie(s1)...)
	pwCall(t, ts, "PUT", "/agentik/me/password", `{"current":"long enough password","new":"short"}`, 400, agent.CodeBadRequest, nil, cookie(s1)...)
	pwCall(t, ts, "PUT", "/agentik/me/password", `{"current":"long enough password","new":"changed password one"}`, 200, "", nil, cookie(s1)...)
	if code, _ := formLogin(t, ts, "ann@example.com", "long enough password"); code != 401 {
		t.Errorf("sign-in with the old password: %d", code)
	}
	code, s2 := formLogin(t, ts, "ANN@example.com ", "changed password one")
	if code != http.StatusSeeOther || s2 == "" {
		t.Fatalf("sign-in with the new password: %d %q", code, s2)
	}
	pwCall(t, ts, "GET", "/agentik/me", "", 200, "", nil, cookie(s1)...) // a change ends no session

	// The admin's reset link ends both sessions.
	var rl struct{ Token, URL string }
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/reset", ``, 201, "", &rl, bearer...)
	if !strings.HasSuffix(rl.URL, "/reset?token="+rl.Token) {
		t.Errorf("reset url %q", rl.URL)
	}
	reset := func(pw string) string { return fmt.Sprintf(`{"token":%q,"password":%q}`, rl.Token, pw) }
	pwCall(t, ts, "POST", "/agentik/reset", reset("short"), 400, agent.CodeBadRequest, nil)
	pwCall(t, ts, "GET", "/agentik/me", "", 200, "", nil, cookie(s2)...) // not yet
	s3 := pwCall(t, ts, "POST", "/agentik/reset", reset("after the reset"), 200, "", nil)
	pwCall(t, ts, "POST", "/agentik/reset", reset("after the reset again"), 404, agent.CodeNotFound, nil)
	for _, old := range []string{s1, s2} {
		pwCall(t, ts, "GET", "/agentik/me", "", 401, agent.CodeUnauthorized, nil, cookie(old)...)
	}
	pwCall(t, ts, "GET", "/agentik/me", "", 200, "", nil, cookie(s3)...)
	if code, _ := formLogin(t, ts, "ann@example.com", "after the reset"); code != http.StatusSeeOther {
		t.Errorf("sign-in after the reset: %d", code)
	}
}

// TestPasswordSignupApproval: with AGENTIK_SIGNUP=approval anyone signs
// up, pending (no session) until an admin enables them; with invite a
// member may invite members only.
func TestPasswordSignupApproval(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin), withSignup(agent.SignupApproval), withFailures(2, time.Hour))
	var u agent.User
	if c := pwCall(t, ts, "POST", "/agentik/signup", `{"email":"cid@example.com","password":"a long password"}`, 201, "", &u); c != "" || !u.Pending || !u.Disabled {
		t.Fatalf("pending sign-up: %+v, cookie %q", u, c)
	}
	if code, c := formLogin(t, ts, "cid@example.com", "a long password"); code != http.StatusForbidden || c != "" {
		t.Fatalf("a pending user's sign-in: %d %q", code, c)
	}
	id := u.ID
	u = agent.User{}
	pwCall(t, ts, "PATCH", "/agentik/users/"+id, `{"disabled":false}`, 200, "", &u, "Authorization", "Bearer "+admin)
	if u.Pending || u.Disabled {
		t.Fatalf("enabled: %+v", u)
	}
	code, c := formLogin(t, ts, "cid@example.com", "a long password")
	if code != http.StatusSeeOther || c == "" {
		t.Fatalf("an approved user's sign-in: %d %q", code, c)
	}
	pwCall(t, ts, "POST", "/agentik/invites", `{"role":"admin"}`, 403, agent.CodeForbidden, nil, cookie(c)...)
	pwCall(t, ts, "POST", "/agentik/invites", `{}`, 201, "", nil, cookie(c)...)

	// Two wrong passwords (a pending refusal counted none); then the
	// address waits, and even the right password is not checked.
	for _, want := range []int{401, 401, 429, 429} {
		if code, _ := formLogin(t, ts, "cid@example.com", map[bool]string{true: "a long password", false: "a wrong password"}[want == 429]); code != want {
			t.Fatalf("sign-in: %d, want %d", code, want)
		}
	}
}
