package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
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

// dragMouse drags from the centre of the element from to the centre of
// the element to with the mouse, as a person does: press, move in steps,
// release. Chromium turns it into the HTML drag events (dragstart,
// dragover, drop) the page handles.
func dragMouse(from, to string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		centre := func(sel string) (x, y float64, err error) {
			p, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = (`+sel+`).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`))
			if err != nil {
				return 0, 0, err
			}
			return p[0], p[1], nil
		}
		x0, y0, err := centre(from)
		if err != nil {
			return err
		}
		x1, y1, err := centre(to)
		if err != nil {
			return err
		}
		mouse := func(typ input.DispatchMouseEventType, x, y float64, buttons int64) error {
			p := input.DispatchMouseEventParams{Type: typ, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: buttons, ClickCount: 1}
			_, err := cdp.Call(ctx, tg, input.DispatchMouseEvent, p)
			return err
		}
		if err := mouse(input.DispatchMouseEventTypeMouseMoved, x0, y0, 0); err != nil {
			return err
		}
		if err := mouse(input.DispatchMouseEventTypeMousePressed, x0, y0, 1); err != nil {
			return err
		}
		const steps = 10
		for i := 1; i <= steps; i++ {
			f := float64(i) / steps
			if err := mouse(input.DispatchMouseEventTypeMouseMoved, x0+(x1-x0)*f, y0+(y1-y0)*f, 1); err != nil {
				return err
			}
		}
		// A drop goes where the last dragover was accepted: hover on the
		// target a moment, as a hand does, before letting go.
		for _, dx := range []float64{1, 0} {
			if err := mouse(input.DispatchMouseEventTypeMouseMoved, x1+dx, y1, 1); err != nil {
				return err
			}
		}
		return mouse(input.DispatchMouseEventTypeMouseReleased, x1, y1, 0)
	})
}

// TestBrowserDragChatIntoProject: Ann drags a chat from her sidebar's
// list onto a project: it moves into the project (its section lists it,
// the server has it there); dragged from the section back onto the chat
// list it leaves the project.
func TestBrowserDragChatIntoProject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.adminKey(t)
	_, annKey := ts.member(t, admin, "ann")
	var p struct{ ID string }
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/projects", `{"name":"Launch"}`, 201)), &p); err != nil {
		t.Fatal(err)
	}
	var c struct{ ID string }
	if err := json.Unmarshal([]byte(ts.as(t, annKey, "POST", "/agentik/conversations", `{"title":"loose chat"}`, 201)), &c); err != nil {
		t.Fatal(err)
	}

	ann := signInTab(t, ts, annKey)
	openPage(t, ts, ann, "/")
	section := `document.querySelector('[data-testid="project-section"][data-project-id="` + p.ID + `"]')`
	row := `document.querySelector('#conv-list > [data-id="` + c.ID + `"] a')`
	waitJS(t, ann, "the project and the chat", section+` && `+row+`?.checkVisibility()`)

	do(t, ann, dragMouse(row, section+`.querySelector('.project-head')`))
	inProject := section + `.querySelector('[data-testid="project-chat"][data-id="` + c.ID + `"]')`
	waitJS(t, ann, "the chat in the project's section", inProject+` !== null && !`+row+`.checkVisibility()`)
	if got := ts.as(t, annKey, "GET", "/agentik/conversations/"+c.ID, "", 200); !strings.Contains(got, `"project":"`+p.ID+`"`) {
		t.Errorf("after the drag into the project: %s", got)
	}
	screenshot(t, ann, "project-drag.png")

	do(t, ann, dragMouse(inProject+`.querySelector('a')`, `document.querySelector('[data-testid="conversation-list"]').closest('nav')`))
	waitJS(t, ann, "the chat back in the list", inProject+` === null && `+row+`.checkVisibility()`)
	if got := ts.as(t, annKey, "GET", "/agentik/conversations/"+c.ID, "", 200); strings.Contains(got, `"project":"proj_`) {
		t.Errorf("after the drag out of the project: %s", got)
	}
}
