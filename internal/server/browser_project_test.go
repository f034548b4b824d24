package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// setValue sets a form control's value as typing would.
func setValue(selector, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); })()`, selector, value))
}

// TestBrowserProjects: Ann makes a project on the projects page with
// instructions and a default agent, and adds Bob by email as a viewer;
// a chat she starts with the project's "+" in the sidebar runs as that
// agent and answers with the instructions in its system prompt; Bob,
// whose sidebar was open, sees the chat appear live in the project's
// section, reads it, and has no composer (the note names his role); the
// server refuses his send naming it too. Ann moves another chat into the
// project from the chat's menu.
func TestBrowserProjects(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	_, bobKey := ts.member(t, admin, "bob")
	ts.as(t, annKey, "POST", "/agentik/agents", `{"slug":"launcher","name":"Launcher","instructions":"You are the launch bot."}`, 201)

	ann := signInTab(t, ts, annKey)
	do(t, ann, chromedp.Navigate(ts.URL+"/projects"))
	waitJS(t, ann, "the projects page", `document.body.dataset.ready === 'true' && document.body.dataset.conn === 'online'`)
	do(t, ann, setValue(`[data-testid="project-name"]`, "Launch"))
	click(t, ann, "Create project")
	waitAfterSubmit(t, ann, "the project's page", `location.pathname.startsWith('/projects/proj_') && document.body.dataset.conn === 'online'`)
	do(t, ann, setValue(`[data-testid="project-instructions"]`, "Answer as the launch team."))
	do(t, ann, setValue(`[data-testid="project-agent"]`, "launcher"))
	click(t, ann, "Save")
	waitJS(t, ann, "saved", `document.body.dataset.saved === '1'`)
	do(t, ann, setValue(`[data-testid="member-email"]`, "bob@example.com"))
	click(t, ann, "Add member")
	waitJS(t, ann, "bob a viewer", `document.querySelector('[data-testid="project-member"]')?.dataset.role === 'viewer' && document.querySelector('[data-testid="project-member"]').innerText.includes('bob')`)
	if got := eval[string](t, ann, `document.querySelector('[data-testid="project-instructions"]').value`); got != "Answer as the launch team." {
		t.Fatalf("instructions after saving: %q", got)
	}

	bob := signInTab(t, ts, bobKey)
	waitJS(t, bob, "the project in bob's sidebar", `document.querySelector('[data-testid="project-section"]')?.dataset.role === 'viewer'`)

	// Ann starts a chat in the project from her sidebar.
	openPage(t, ts, ann, "/")
	waitJS(t, ann, "the project in ann's sidebar", `document.querySelector('[data-testid="project-section"]') !== null`)
	click(t, ann, "New chat in Launch")
	waitJS(t, ann, "the new chat", `location.pathname.startsWith('/c/') && document.querySelector('#main').dataset.subscribed === 'true'`)
	send(t, ann, "[[system]] plan the launch")
	waitJS(t, ann, "the answer", jsAnswers+`.length === 1`)
	answer := answerText(t, ann, 0)
	if !strings.Contains(answer, "You are the launch bot.") || !strings.Contains(answer, "Answer as the launch team.") {
		t.Fatalf("the system prompt lacks the agent's or the project's instructions: %q", answer)
	}
	id := conversationID(t, ann)
	waitJS(t, ann, "the chat in ann's project section", `document.querySelector('[data-testid="project-chat"][data-id="`+id+`"]') !== null`)

	// Bob sees it live in the project's section, opens it, cannot send.
	waitJS(t, bob, "the chat live in bob's project section", `document.querySelector('[data-testid="project-chat"][data-id="`+id+`"]') !== null`)
	if n := eval[int](t, bob, `[...document.querySelectorAll('#conv-list > [data-id="`+id+`"]')].filter((li) => li.checkVisibility()).length`); n != 0 {
		t.Errorf("the project's chat also shows among bob's dated chats")
	}
	do(t, bob, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="project-chat"][data-id="`+id+`"] a').click()`))
	waitJS(t, bob, "the chat, read-only", `location.pathname === '/c/`+id+`' && document.querySelector('[data-testid="viewer-note"]') !== null`)
	waitJS(t, bob, "its answer", jsAnswers+`.length === 1`)
	if note := eval[string](t, bob, `document.querySelector('[data-testid="viewer-note"]').textContent`); !strings.Contains(note, "viewer") || !strings.Contains(note, "Launch") {
		t.Errorf("viewer note %q", note)
	}
	screenshot(t, bob, "project-viewer.png")
	if n := eval[int](t, bob, `document.querySelectorAll('#composer, #prompt').length`); n != 0 {
		t.Errorf("bob has a composer in a project where he is a viewer")
	}
	if n := eval[int](t, bob, `[...document.querySelectorAll('#chat-actions [data-action="rename"], #chat-actions [data-action="share"], #chat-actions [data-action="delete"], #messages .branch-btn')].filter((b) => b.checkVisibility()).length`); n != 0 {
		t.Errorf("bob, a viewer, is offered %d controls that change the chat", n)
	}
	if got := ts.as(t, bobKey, "POST", "/agentik/conversations/"+id+"/send", sendBody("hi"), 403); !strings.Contains(got, "viewer") {
		t.Errorf("bob's send: %s", got)
	}

	// Ann makes Bob an editor on the project page: he sends in the chat;
	// then she removes him: the chat is gone from his sight.
	do(t, ann, chromedp.Navigate(ts.URL+"/projects/"+eval[string](t, bob, `document.querySelector('[data-testid="project-section"]').dataset.projectId`)))
	waitJS(t, ann, "the project's page", `document.body.dataset.conn === 'online' && document.querySelector('[data-testid="project-member"]') !== null`)
	do(t, ann, setValue(`[data-testid="project-member"] [data-action="member-role"]`, "editor"))
	waitJS(t, ann, "bob an editor", `document.querySelector('[data-testid="project-member"]')?.dataset.role === 'editor'`)
	do(t, bob, chromedp.Reload())
	waitConnected(t, bob)
	send(t, bob, "an editor now")
	waitJS(t, bob, "bob's answer", jsAnswers+`.length === 2`)
	click(t, ann, "Remove bob")
	waitJS(t, ann, "bob removed", `document.querySelector('[data-testid="project-member"]') === null`)
	ts.as(t, bobKey, "GET", "/agentik/conversations/"+id, "", 404)

	// Ann moves another chat of hers into the project from its menu.
	openPage(t, ts, ann, "/")
	send(t, ann, "a loose chat")
	waitJS(t, ann, "its answer", jsAnswers+`.length === 1`)
	loose := conversationID(t, ann)
	click(t, ann, "Move to a project")
	waitJS(t, ann, "the move dialog", `document.querySelector('[data-testid="project-move"]').open && document.querySelectorAll('[data-testid="project-move-select"] option').length === 2`)
	do(t, ann, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('[data-testid="project-move-select"]'); s.value = s.options[1].value; })()`))
	click(t, ann, "Move")
	waitJS(t, ann, "the chat in the project's section", `document.querySelector('[data-testid="project-chat"][data-id="`+loose+`"]') !== null`)
	if got := ts.as(t, annKey, "GET", "/agentik/conversations/"+loose, "", 200); !strings.Contains(got, `"project":"proj_`) {
		t.Errorf("after the move: %s", got)
	}
}
