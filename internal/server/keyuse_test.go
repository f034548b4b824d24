package server_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestKeySignInCountsAsUse: a key typed into the sign-in form shows a
// last use in its user's key list, as a key sent by a program does.
func TestKeySignInCountsAsUse(t *testing.T) {
	t.Parallel()
	const admin = "k-admin"
	ts := newTestServer(t, withKeys(admin))
	bearer := []string{"Authorization", "Bearer " + admin}
	var bob agent.User
	pwCall(t, ts, "POST", "/agentik/users", `{"name":"Bob","email":"bob@example.com"}`, 201, "", &bob, bearer...)
	var key agent.NewKey
	pwCall(t, ts, "POST", "/agentik/users/"+bob.ID+"/keys", `{"name":"laptop"}`, 201, "", &key, bearer...)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(ts.URL+"/login", url.Values{"key": {key.Key}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in with Bob's key: %d", resp.StatusCode)
	}
	var keys struct{ Keys []agent.Key }
	pwCall(t, ts, "GET", "/agentik/users/"+bob.ID+"/keys", "", 200, "", &keys, bearer...)
	if len(keys.Keys) != 1 || keys.Keys[0].LastUsed == nil {
		t.Fatalf("Bob's keys after he signed in with one: %+v; want its last use", keys.Keys)
	}
}
