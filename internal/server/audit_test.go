package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// auditLine is what the test compares of an entry.
type auditLine struct{ Actor, Action, Target, Protocol string }

// TestAuditScriptedDay: a scripted set of actions (users, keys, roles,
// invites, sign-ups, sign-ins good and bad, agents, an export) yields
// exactly the expected entries, each from the client's address; a member
// reads no audit; the filters and pages select; the export verifies, and
// fails on an edited entry, a removed one and two swapped, naming it.
func TestAuditScriptedDay(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	bearer := []string{"Authorization", "Bearer " + admin}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(v url.Values) {
		resp, err := noFollow.PostForm(ts.URL+"/login", v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	var bob agent.User
	pwCall(t, ts, "POST", "/agentik/users", `{"name":"Bob","email":"bob@example.com"}`, 201, "", &bob, bearer...)
	var key agent.NewKey
	pwCall(t, ts, "POST", "/agentik/users/"+bob.ID+"/keys", `{"name":"laptop"}`, 201, "", &key, bearer...)
	form(url.Values{"key": {"agk_not-a-key"}})
	var inv struct{ Token, ID string }
	pwCall(t, ts, "POST", "/agentik/invites", `{"email":"ann@example.com"}`, 201, "", &inv, bearer...)
	var ann agent.User
	pwCall(t, ts, "POST", "/agentik/signup", fmt.Sprintf(`{"token":%q,"email":"ann@example.com","password":"a long password"}`, inv.Token), 201, "", &ann)
	form(url.Values{"email": {"ann@example.com"}, "password": {"not her password"}})
	form(url.Values{"email": {"ann@example.com"}, "password": {"a long password"}})
	pwCall(t, ts, "PATCH", "/agentik/users/"+bob.ID, `{"role":"admin"}`, 200, "", nil, bearer...)
	pwCall(t, ts, "DELETE", "/agentik/users/"+bob.ID+"/keys/"+key.ID, "", 200, "", nil, bearer...)
	pwCall(t, ts, "POST", "/agentik/agents", `{"slug":"helper","name":"Helper"}`, 201, "", nil, bearer...)
	pwCall(t, ts, "PATCH", "/agentik/agents/helper", `{"instructions":"Be brief."}`, 200, "", nil, bearer...)
	pwCall(t, ts, "DELETE", "/agentik/agents/helper", "", 204, "", nil, bearer...)
	var c agent.Conversation
	pwCall(t, ts, "POST", "/agentik/conversations", `{}`, 201, "", &c, bearer...)
	resp := ts.do(t, "GET", "/agentik/conversations/"+c.ID+"/export", "", bearer...)
	resp.Body.Close()
	var reset struct{ Token string }
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/reset", "", 201, "", &reset, bearer...)
	pwCall(t, ts, "POST", "/agentik/reset", fmt.Sprintf(`{"token":%q,"password":"another long one"}`, reset.Token), 200, "", nil)
	pwCall(t, ts, "DELETE", "/agentik/users/"+bob.ID, "", 200, "", nil, bearer...)

	// A member reads no audit.
	var annKey agent.NewKey
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/keys", `{"name":"k"}`, 201, "", &annKey, bearer...)
	pwCall(t, ts, "GET", "/agentik/audit", "", 403, agent.CodeForbidden, nil, "Authorization", "Bearer "+annKey.Key)
	pwCall(t, ts, "GET", "/agentik/audit/export", "", 403, agent.CodeForbidden, nil, "Authorization", "Bearer "+annKey.Key)

	resp = ts.do(t, "GET", "/agentik/audit/export", "", bearer...)
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("export: %d %s", resp.StatusCode, export)
	}
	var got []auditLine
	var entries []agent.AuditEntry
	sc := bufio.NewScanner(bytes.NewReader(export))
	for sc.Scan() {
		var e agent.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.From.Address != "127.0.0.1" {
			t.Errorf("entry %d from %+v", e.Seq, e.From)
		}
		entries = append(entries, e)
		got = append(got, auditLine{e.Actor, e.Action, e.Target, e.From.Protocol})
	}
	L := agent.LocalUser
	want := []auditLine{
		{L, agent.AuditUserCreated, bob.ID, "rest"},
		{L, agent.AuditKeyCreated, bob.ID, "rest"},
		{"", agent.AuditSignInFailed, "", "web"},
		{L, agent.AuditInvite, inv.ID, "rest"},
		{ann.ID, agent.AuditSignUp, ann.ID, "rest"},
		{ann.ID, agent.AuditSignIn, ann.ID, "rest"},
		{"", agent.AuditSignInFailed, "ann@example.com", "web"},
		{ann.ID, agent.AuditSignIn, ann.ID, "web"},
		{L, agent.AuditUserUpdated, bob.ID, "rest"},
		{L, agent.AuditKeyRevoked, bob.ID, "rest"},
		{L, agent.AuditAgentCreated, "helper", "rest"},
		{L, agent.AuditAgentUpdated, "helper", "rest"},
		{L, agent.AuditAgentDeleted, "helper", "rest"},
		{L, agent.AuditExport, c.ID, "rest"},
		{L, agent.AuditResetLink, ann.ID, "rest"},
		{ann.ID, agent.AuditPasswordReset, ann.ID, "rest"},
		{ann.ID, agent.AuditSignIn, ann.ID, "rest"},
		{L, agent.AuditUserDeleted, bob.ID, "rest"},
		{L, agent.AuditKeyCreated, ann.ID, "rest"},
		{L, agent.AuditExport, "audit", "rest"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries:\n got %v\nwant %v", got, want)
	}
	if d := string(entries[8].Details); d != `{"role":"admin"}` {
		t.Errorf("the role change's details: %s", d)
	}
	if strings.Contains(string(export), "a long password") || strings.Contains(string(export), inv.Token) || strings.Contains(string(export), key.Key) {
		t.Error("the export holds a password, token or key")
	}

	// Filters and pages.
	var page struct {
		Entries []agent.AuditEntry
		Next    int64
	}
	pwCall(t, ts, "GET", "/agentik/audit?action=sign_in_failed", "", 200, "", &page, bearer...)
	if len(page.Entries) != 2 || page.Next != 0 {
		t.Errorf("sign_in_failed: %+v", page)
	}
	pwCall(t, ts, "GET", "/agentik/audit?actor="+ann.ID+"&limit=2", "", 200, "", &page, bearer...)
	if len(page.Entries) != 2 || page.Entries[0].Action != agent.AuditSignUp || page.Next != page.Entries[1].Seq {
		t.Fatalf("ann's first page: %+v", page)
	}
	pwCall(t, ts, "GET", fmt.Sprintf("/agentik/audit?actor=%s&limit=2&after=%d", ann.ID, page.Next), "", 200, "", &page, bearer...)
	if len(page.Entries) != 2 || page.Entries[0].Action != agent.AuditSignIn || page.Entries[1].Action != agent.AuditPasswordReset {
		t.Fatalf("ann's second page: %+v", page)
	}
	pwCall(t, ts, "GET", "/agentik/audit?from=yesterday", "", 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "GET", "/agentik/audit?limit=0", "", 400, agent.CodeBadRequest, nil, bearer...)
	pwCall(t, ts, "GET", "/agentik/audit?from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z", "", 200, "", &page, bearer...)
	if len(page.Entries) != 0 {
		t.Errorf("entries of 2000: %d", len(page.Entries))
	}

	// The export verifies; each tampering fails at its entry.
	if rep, err := agent.VerifyAudit(bytes.NewReader(export)); err != nil || rep.Entries != len(want) || rep.Head != entries[len(entries)-1].Hash {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(export)), "\n")
	tamper := func(name string, f func(ls []string) []string, wantErr string) {
		t.Helper()
		ls := f(append([]string(nil), lines...))
		_, err := agent.VerifyAudit(strings.NewReader(strings.Join(ls, "")))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: verify says %v, want %q", name, err, wantErr)
		}
	}
	tamper("edited", func(ls []string) []string {
		ls[6] = strings.Replace(ls[6], "ann@example.com", "eve@example.com", 1)
		return ls
	}, "line 7: entry 7 was altered")
	tamper("removed", func(ls []string) []string { return append(ls[:4], ls[5:]...) }, "line 5: entry 6 follows entry 4: entries 5 to 5 were removed")
	tamper("swapped", func(ls []string) []string {
		ls[9], ls[10] = ls[10], ls[9]
		return ls
	}, "line 10: entry 11 follows entry 9")
}

// TestAuditAdminRead: an admin reading another user's conversation (its
// messages over REST, or its chat page) is recorded as admin_read naming
// the owner; an admin reading their own, and a member reading theirs, are
// not.
func TestAuditAdminRead(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	bearer := []string{"Authorization", "Bearer " + admin}
	var ann agent.User
	pwCall(t, ts, "POST", "/agentik/users", `{"name":"Ann","email":"ann@example.com"}`, 201, "", &ann, bearer...)
	var key agent.NewKey
	pwCall(t, ts, "POST", "/agentik/users/"+ann.ID+"/keys", `{"name":"laptop"}`, 201, "", &key, bearer...)
	annAuth := []string{"Authorization", "Bearer " + key.Key}
	var hers, mine agent.Conversation
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"hers"}`, 201, "", &hers, annAuth...)
	pwCall(t, ts, "POST", "/agentik/conversations", `{"title":"mine"}`, 201, "", &mine, bearer...)
	pwCall(t, ts, "POST", "/agentik/conversations/"+hers.ID+"/send", sendBody("hello"), 200, "", nil, annAuth...)

	pwCall(t, ts, "GET", "/agentik/conversations/"+hers.ID+"/messages", "", 200, "", nil, annAuth...)
	pwCall(t, ts, "GET", "/agentik/conversations/"+mine.ID+"/messages", "", 200, "", nil, bearer...)
	pwCall(t, ts, "GET", "/agentik/conversations/"+hers.ID+"/messages", "", 200, "", nil, bearer...)
	resp := ts.do(t, "GET", "/c/"+hers.ID, "", bearer...)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the admin's chat page of ann's conversation: %d", resp.StatusCode)
	}

	var page struct{ Entries []agent.AuditEntry }
	pwCall(t, ts, "GET", "/agentik/audit?action=admin_read", "", 200, "", &page, bearer...)
	if len(page.Entries) != 2 {
		t.Fatalf("admin_read entries: %+v, want 2 (REST and the page)", page.Entries)
	}
	for _, e := range page.Entries {
		if e.Actor != agent.LocalUser || e.Target != hers.ID || string(e.Details) != `{"owner":"`+ann.ID+`","read":"messages"}` {
			t.Errorf("entry %+v (details %s)", e, e.Details)
		}
	}
	if p := page.Entries[0].From.Protocol; p != "rest" {
		t.Errorf("the REST read's protocol: %q", p)
	}
}
