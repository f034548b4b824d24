package server_test

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentik/agentik/internal/agent"
)

// TestBrowserProjectGroup: an admin makes a group and adds Bob to it,
// then shares a project with the group from the project's page ("Add
// group", as editor); Bob, whose browser was open, gets the project in
// his sidebar (at its next load) and its chat live, reads it and sends in
// it. Removed from the group, Bob gets no more of the project's events at
// once (a chat made next does not reach his open sidebar), and at his next
// request the project and its chat are not_found.
func TestBrowserProjectGroup(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	bobID, bobKey := ts.member(t, admin, "bob")
	var grp agent.Group
	if err := json.Unmarshal([]byte(ts.as(t, admin, "POST", "/agentik/groups", `{"name":"launch-team"}`, 201)), &grp); err != nil {
		t.Fatal(err)
	}
	ts.as(t, admin, "PUT", "/agentik/groups/"+grp.ID+"/members/"+bobID, "", 200)
	var p agent.Project
	if err := json.Unmarshal([]byte(ts.as(t, admin, "POST", "/agentik/projects", `{"name":"Launch"}`, 201)), &p); err != nil {
		t.Fatal(err)
	}
	bob := signInTab(t, ts, bobKey)
	if n := eval[int](t, bob, `document.querySelectorAll('[data-testid="project-section"]').length`); n != 0 {
		t.Fatalf("bob sees %d projects before the share", n)
	}

	// The admin shares the project with the group on its page.
	adm := signInTab(t, ts, admin)
	do(t, adm, chromedp.Navigate(ts.URL+"/projects/"+p.ID))
	waitJS(t, adm, "the project's page", `document.body.dataset.ready === 'true' && document.body.dataset.conn === 'online' && document.querySelector('[data-testid="group-member-form"]') !== null`)
	do(t, adm, setValue(`[data-testid="group-member-group"]`, grp.ID))
	do(t, adm, setValue(`[data-testid="group-member-role"]`, "editor"))
	click(t, adm, "Add group")
	waitJS(t, adm, "the group an editor", `document.querySelector('[data-testid="project-member"][data-group-id="`+grp.ID+`"]')?.dataset.role === 'editor' && document.querySelector('[data-testid="project-member"]').innerText.includes('launch-team')`)

	// Bob's open sidebar: the chat the admin starts arrives live, and with
	// it the project's section.
	var c agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, admin, "POST", "/agentik/conversations", `{"title":"plan zebra","project":"`+p.ID+`"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}
	ts.as(t, admin, "POST", "/agentik/conversations/"+c.ID+"/send", sendBody("plan the launch"), 200)
	waitJS(t, bob, "the chat live in bob's project section", `document.querySelector('[data-testid="project-section"][data-project-id="`+p.ID+`"] [data-testid="project-chat"][data-id="`+c.ID+`"]') !== null`)
	do(t, bob, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="project-chat"][data-id="`+c.ID+`"] a').click()`))
	waitJS(t, bob, "the chat", `location.pathname === '/c/`+c.ID+`' && document.querySelector('#main').dataset.subscribed === 'true'`)
	waitJS(t, bob, "its answer", jsAnswers+`.length === 1`)
	send(t, bob, "an editor through the group")
	waitJS(t, bob, "bob's answer", jsAnswers+`.length === 2`)
	screenshot(t, bob, "project-group-member.png")

	// Out of the group: no more events at once, not_found at the next request.
	openPage(t, ts, bob, "/")
	waitJS(t, bob, "the project in bob's sidebar", `document.querySelector('[data-testid="project-chat"][data-id="`+c.ID+`"]') !== null`)
	ts.as(t, admin, "DELETE", "/agentik/groups/"+grp.ID+"/members/"+bobID, "", 200)
	var later agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, admin, "POST", "/agentik/conversations", `{"title":"after bob left","project":"`+p.ID+`"}`, 201)), &later); err != nil {
		t.Fatal(err)
	}
	// Bob's own chat, made after, is the next thing his sidebar gets.
	var own agent.Conversation
	if err := json.Unmarshal([]byte(ts.as(t, bobKey, "POST", "/agentik/conversations", `{"title":"bob's own"}`, 201)), &own); err != nil {
		t.Fatal(err)
	}
	waitJS(t, bob, "bob's own chat live", `document.querySelector('#conv-list [data-id="`+own.ID+`"]') !== null`)
	if n := eval[int](t, bob, `document.querySelectorAll('[data-id="`+later.ID+`"]').length`); n != 0 {
		t.Errorf("a chat made in the project after bob left the group reached his sidebar")
	}
	ts.as(t, bobKey, "GET", "/agentik/projects/"+p.ID, "", 404)
	ts.as(t, bobKey, "GET", "/agentik/conversations/"+c.ID, "", 404)
	do(t, bob, chromedp.Reload())
	waitConnected(t, bob)
	waitJS(t, bob, "the project gone from bob's sidebar", `document.querySelectorAll('[data-testid="project-section"]').length === 0 && document.querySelector('#conv-list [data-id="`+c.ID+`"]') === null`)
}
