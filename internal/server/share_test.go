package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// shareLink makes a share link of conversation id as key's user.
func (ts *testServer) shareLink(t testing.TB, key, id, body string) agent.Share {
	t.Helper()
	var s agent.Share
	if err := json.Unmarshal([]byte(ts.as(t, key, "POST", "/agentik/conversations/"+id+"/shares", body, 201)), &s); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "/s/") || len(s.URL) < len("/s/")+22 {
		t.Fatalf("share link %+v", s)
	}
	return s
}

// page gets a page without following redirects: its status, body and
// Location.
func (ts *testServer) page(t testing.TB, path string, hdr ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Location")
}

var nonceAttr = regexp.MustCompile(`nonce="[^"]*"`)

// TestShareLinkSame404: a link shows the conversation to a signed-in
// colleague; a wrong token, a revoked link, an expired one (the server's
// clock moved past it) and a link to a deleted conversation are the very
// same 404 page; only its owner lists and revokes it; an anonymous visitor
// is sent to sign in; making and revoking are in the audit log.
func TestShareLinkSame404(t *testing.T) {
	t.Parallel()
	var clock backClock
	ts := newTestServer(t, withClock(&clock))
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	_, bobKey := ts.member(t, admin, "bob")
	bob := []string{"Authorization", "Bearer " + bobKey}

	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/conversations", `{"title":"plans"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	ts.as(t, annKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("the otter plan"), 200)
	ts.as(t, bobKey, "POST", "/agentik/conversations/"+c.ID+"/shares", `{}`, 404) // not his to share
	ts.as(t, annKey, "POST", "/agentik/conversations/"+c.ID+"/shares", `{"expires_at":"2001-01-01T00:00:00Z"}`, 400)
	revoked := ts.shareLink(t, annKey, c.ID, `{}`)
	expiring := ts.shareLink(t, annKey, c.ID, `{"expires_at":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
	deleted := ts.shareLink(t, annKey, c.ID, ``)

	for _, s := range []agent.Share{revoked, expiring, deleted} {
		code, body, _ := ts.page(t, s.URL, bob...)
		if code != 200 || !strings.Contains(body, "the otter plan") || strings.Contains(body, `id="composer"`) {
			t.Fatalf("GET %s as bob: %d %s", s.URL, code, body)
		}
	}
	// Anonymous: sent to sign in, back to the link after.
	if code, _, loc := ts.page(t, revoked.URL); code != http.StatusSeeOther || loc != "/login?next=%2Fs%2F"+strings.TrimPrefix(revoked.URL, "/s/") {
		t.Fatalf("anonymous GET: %d %q", code, loc)
	}

	// Only Ann lists and revokes her links.
	if l := ts.as(t, bobKey, "GET", "/agentik/shares", "", 200); strings.Contains(l, revoked.ID) {
		t.Fatalf("bob lists %s", l)
	}
	if l := ts.as(t, annKey, "GET", "/agentik/shares", "", 200); !strings.Contains(l, revoked.ID) || !strings.Contains(l, expiring.ID) || strings.Contains(l, "/s/") {
		t.Fatalf("ann lists %s", l)
	}
	ts.as(t, bobKey, "DELETE", "/agentik/shares/"+revoked.ID, "", 404)
	ts.as(t, annKey, "DELETE", "/agentik/shares/"+revoked.ID, "", 204)
	ts.as(t, annKey, "DELETE", "/agentik/shares/"+revoked.ID, "", 404)

	// The same 404 page for all four.
	wrongCode, want, _ := ts.page(t, "/s/"+strings.Repeat("A", 43), bob...)
	want = nonceAttr.ReplaceAllString(want, "")
	if wrongCode != 404 || !strings.Contains(want, "share-not-found") {
		t.Fatalf("wrong token: %d %s", wrongCode, want)
	}
	check := func(what, path string) {
		t.Helper()
		code, body, _ := ts.page(t, path, bob...)
		if code != 404 || nonceAttr.ReplaceAllString(body, "") != want {
			t.Errorf("%s: %d, and the page differs from a wrong token's:\n%s", what, code, body)
		}
	}
	check("revoked", revoked.URL)
	check("wrong, long", "/s/"+strings.Repeat("x", 500))
	clock.set(-2 * time.Hour) // the server's clock two hours ahead
	check("expired", expiring.URL)
	clock.set(0)
	if code, _, _ := ts.page(t, expiring.URL, bob...); code != 200 {
		t.Fatalf("before its expiry the link answers %d", code)
	}
	ts.as(t, annKey, "DELETE", "/agentik/conversations/"+c.ID, "", 204)
	check("conversation deleted", deleted.URL)
	if l := ts.as(t, annKey, "GET", "/agentik/shares", "", 200); strings.Contains(l, deleted.ID) {
		t.Fatalf("a deleted conversation's link is listed: %s", l)
	}

	audit := ts.as(t, admin, "GET", "/agentik/audit?action=share_created", "", 200)
	if !strings.Contains(audit, revoked.ID) || !strings.Contains(audit, c.ID) {
		t.Errorf("audit of share_created: %s", audit)
	}
	if audit := ts.as(t, admin, "GET", "/agentik/audit?action=share_revoked", "", 200); !strings.Contains(audit, revoked.ID) {
		t.Errorf("audit of share_revoked: %s", audit)
	}
}
