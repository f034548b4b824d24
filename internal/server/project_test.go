package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// sendBody is the body of a send of text.
func sendBody(text string) string {
	b, _ := json.Marshal(map[string]any{"content": []agent.Content{agent.Text(text)}})
	return string(b)
}

// adminKey makes the first key, the local admin's, which turns
// authentication on.
func (ts *testServer) adminKey(t testing.TB) string {
	t.Helper()
	var k agent.NewKey
	ts.call(t, "POST", "/agentik/me/keys", `{"name":"admin"}`, 201, &k)
	return k.Key
}

// member makes a member account (with the admin's key) and returns its id
// and a key for it.
func (ts *testServer) member(t testing.TB, admin, name string) (id, key string) {
	t.Helper()
	var u agent.User
	if err := json.Unmarshal([]byte(ts.as(t, admin, "POST", "/agentik/users", `{"name":"`+name+`","email":"`+name+`@example.com"}`, 201)), &u); err != nil {
		t.Fatal(err)
	}
	var k agent.NewKey
	if err := json.Unmarshal([]byte(ts.as(t, admin, "POST", "/agentik/users/"+u.ID+"/keys", `{"name":"test"}`, 201)), &k); err != nil {
		t.Fatal(err)
	}
	return u.ID, k.Key
}

// as does a request with key, checks the status and returns the body.
func (ts *testServer) as(t testing.TB, key, method, path, body string, status int) string {
	t.Helper()
	resp := ts.do(t, method, path, body, "Authorization", "Bearer "+key)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, status, b)
	}
	return string(b)
}

// TestProjectRule: a project's instructions follow the agent's in the
// system prompt of its chats; its viewer reads a chat (REST, the list, the
// WebSocket's all stream live, search, replay) and cannot send (forbidden
// naming the role); a non-member sees nothing of it on any of those; a
// deleted project gives its chats back to their owner.
func TestProjectRule(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	ann, annKey := ts.member(t, admin, "ann")
	bob, bobKey := ts.member(t, admin, "bob")
	_, eveKey := ts.member(t, admin, "eve")

	var p agent.Project
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/projects",
		`{"name":"Launch","instructions":"Answer as the launch team.","members":[{"user_id":"`+bob+`","role":"viewer"}]}`, 201)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Owner != ann || p.Role != agent.ProjectOwner || len(p.Members) != 1 {
		t.Fatalf("project %+v", p)
	}
	ts.as(t, bobKey, "GET", "/agentik/projects/"+p.ID, "", 200)
	ts.as(t, eveKey, "GET", "/agentik/projects/"+p.ID, "", 404)
	if l := ts.as(t, eveKey, "GET", "/agentik/projects", "", 200); strings.Contains(l, p.ID) {
		t.Fatalf("eve lists %s", l)
	}
	ts.as(t, bobKey, "PATCH", "/agentik/projects/"+p.ID, `{"name":"Mine"}`, 403)
	ts.as(t, eveKey, "POST", "/agentik/conversations", `{"title":"sneak","project":"`+p.ID+`"}`, 404)
	ts.as(t, bobKey, "POST", "/agentik/conversations", `{"title":"sneak","project":"`+p.ID+`"}`, 403)

	// Bob's and Eve's sidebars are open before the chat exists.
	bobWS := dialWSOpts(t, ts.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + bobKey}}})
	bobWS.subscribe(map[string]any{"stream": "all"})
	eveWS := dialWSOpts(t, ts.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + eveKey}}})
	eveWS.subscribe(map[string]any{"stream": "all"})

	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/conversations", `{"title":"plan zebra","project":"`+p.ID+`"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	if c.Project != p.ID {
		t.Fatalf("conversation %+v", c)
	}
	answer := ts.as(t, annKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("[[system]] plan zebra"), 200)
	if !strings.Contains(answer, "Answer as the launch team.") {
		t.Fatalf("the answer does not echo the project's instructions: %s", answer)
	}

	// Bob's stream carries the chat live, to its end; Eve's nothing of it.
	for {
		f := bobWS.next()
		if strings.Contains(string(f.Event), `"turn_ended"`) && strings.Contains(string(f.Event), c.ID) {
			break
		}
	}
	ts.as(t, bobKey, "GET", "/agentik/conversations/"+c.ID, "", 200)
	if m := ts.as(t, bobKey, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 200); !strings.Contains(m, "launch team") {
		t.Fatalf("bob's messages %s", m)
	}
	if l := ts.as(t, bobKey, "GET", "/agentik/conversations", "", 200); !strings.Contains(l, c.ID) {
		t.Fatalf("bob's list %s", l)
	}
	if s := ts.as(t, bobKey, "GET", "/agentik/search?q=zebra", "", 200); !strings.Contains(s, c.ID) {
		t.Fatalf("bob's search %s", s)
	}
	if r := ts.as(t, bobKey, "GET", "/agentik/events/replay?limit=1000", "", 200); !strings.Contains(r, c.ID) {
		t.Fatalf("bob's replay %s", r)
	}
	sent := ts.as(t, bobKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("hi"), 403)
	if !strings.Contains(sent, "viewer") || !strings.Contains(sent, agent.CodeForbidden) {
		t.Fatalf("bob's send %s", sent)
	}
	ts.as(t, bobKey, "DELETE", "/agentik/conversations/"+c.ID, "", 403)

	ts.as(t, eveKey, "GET", "/agentik/conversations/"+c.ID, "", 404)
	ts.as(t, eveKey, "GET", "/agentik/conversations/"+c.ID+"/messages", "", 404)
	ts.as(t, eveKey, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("hi"), 404)
	for _, path := range []string{"/agentik/conversations", "/agentik/search?q=zebra", "/agentik/events/replay?limit=1000", "/agentik/conversations/" + c.ID + "/events/replay?limit=1000"} {
		resp := ts.do(t, "GET", path, "", "Authorization", "Bearer "+eveKey)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 && strings.Contains(string(b), c.ID) || strings.Contains(string(b), "launch team") {
			t.Fatalf("eve reads %s: %s", path, b)
		}
	}
	// Eve's stream: the next event she gets is of her own chat, made now.
	var own agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, eveKey, "POST", "/agentik/conversations", `{"title":"mine"}`, 201)), &own); err != nil {
		t.Fatal(err)
	}
	if f := eveWS.next(); !strings.Contains(string(f.Event), own.ID) || strings.Contains(string(f.Event), c.ID) {
		t.Fatalf("eve's stream: %s", f.Event)
	}

	// The project goes: the chat is Ann's again, out of Bob's sight.
	ts.as(t, bobKey, "DELETE", "/agentik/projects/"+p.ID, "", 403)
	ts.as(t, annKey, "DELETE", "/agentik/projects/"+p.ID, "", 204)
	var back agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "GET", "/agentik/conversations/"+c.ID, "", 200)), &back); err != nil {
		t.Fatal(err)
	}
	if back.Project != "" || back.MessageCount != 2 {
		t.Fatalf("after the project's deletion %+v", back)
	}
	ts.as(t, bobKey, "GET", "/agentik/conversations/"+c.ID, "", 404)
	if l := ts.as(t, bobKey, "GET", "/agentik/conversations", "", 200); strings.Contains(l, c.ID) {
		t.Fatalf("bob's list after deletion %s", l)
	}
	_ = protocol.OpListProjects
}

// TestProjectPages: the projects pages show a project to its members only:
// a non-member's /projects/{id} is 404 and their /projects does not list
// it; a viewer's page shows the settings without a save button; a
// viewer's chat page has no composer.
func TestProjectPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	bob, bobKey := ts.member(t, admin, "bob")
	_, eveKey := ts.member(t, admin, "eve")
	var p agent.Project
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/projects", `{"name":"Secret launch","instructions":"zebra","members":[{"user_id":"`+bob+`","role":"viewer"}]}`, 201)), &p); err != nil {
		t.Fatal(err)
	}
	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/conversations", `{"title":"plans","project":"`+p.ID+`"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	eve := []string{"Authorization", "Bearer " + eveKey}
	if code, body, _ := ts.page(t, "/projects/"+p.ID, eve...); code != 404 || strings.Contains(body, "Secret launch") || strings.Contains(body, "zebra") {
		t.Errorf("eve's project page: %d %s", code, body)
	}
	if code, body, _ := ts.page(t, "/projects", eve...); code != 200 || strings.Contains(body, "Secret launch") {
		t.Errorf("eve's projects: %d %s", code, body)
	}
	bobH := []string{"Authorization", "Bearer " + bobKey}
	code, body, _ := ts.page(t, "/projects/"+p.ID, bobH...)
	if code != 200 || !strings.Contains(body, "zebra") || strings.Contains(body, `data-testid="project-save"`) || !strings.Contains(body, "a viewer") {
		t.Errorf("bob's project page: %d %s", code, body)
	}
	if code, body, _ := ts.page(t, "/projects/"+p.ID, "Authorization", "Bearer "+annKey); code != 200 || !strings.Contains(body, `data-testid="project-save"`) || !strings.Contains(body, "bob@example.com") {
		t.Errorf("ann's project page: %d %s", code, body)
	}
	code, body, _ = ts.page(t, "/c/"+c.ID, bobH...)
	if code != 200 || !strings.Contains(body, `data-testid="viewer-note"`) || strings.Contains(body, `id="composer"`) {
		t.Errorf("bob's chat page: %d", code)
	}
	if code, _, loc := ts.page(t, "/projects/"+p.ID); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=") {
		t.Errorf("anonymous: %d %q", code, loc)
	}
}
