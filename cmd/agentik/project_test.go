package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// TestProjectCLI: a project is set up with agentik project: made with
// instructions, a member added by email and shown, listed by the member
// with their role, refused to them to delete, the member removed (the
// project is gone from their list), the project deleted.
func TestProjectCLI(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"))
	cli := func(key string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"project", "--server", tm.p.url("")}, args...)...)
		cmd.Env = []string{"AGENTIK_API_KEY=" + key}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, errb.String())
		}
		return strings.TrimSpace(out.String()), err
	}
	ann, bob := tm.ann.key, tm.bob.key
	id, err := cli(ann, "add", "Launch", "--instructions", "Answer as the launch team.")
	if err != nil || !strings.HasPrefix(id, "proj_") {
		t.Fatalf("add: %q %v", id, err)
	}
	if _, err := cli(ann, "member", "add", id, "nobody@example.com"); err == nil || !strings.Contains(err.Error(), "no user has the email") {
		t.Fatalf("an unknown email: %v", err)
	}
	if out, err := cli(ann, "member", "add", id, "bob@example.com", "--role", "editor"); err != nil || !strings.Contains(out, "1 member") {
		t.Fatalf("member add: %q %v", out, err)
	}
	show, err := cli(ann, "show", id)
	if err != nil || !strings.Contains(show, tm.bob.id+" (editor)") || !strings.Contains(show, "Answer as the launch team.") || !strings.Contains(show, "owner") {
		t.Fatalf("show: %q %v", show, err)
	}
	if list, err := cli(bob, "list"); err != nil || !strings.Contains(list, id) || !strings.Contains(list, "editor") {
		t.Fatalf("bob's list: %q %v", list, err)
	}
	if _, err := cli(bob, "delete", id); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("bob's delete: %v, want 403", err)
	}
	if _, err := cli(ann, "member", "remove", id, tm.bob.id); err != nil {
		t.Fatal(err)
	}
	if list, err := cli(bob, "list"); err != nil || strings.Contains(list, id) {
		t.Fatalf("bob's list after his removal: %q %v", list, err)
	}
	if _, err := cli(bob, "show", id); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("bob's show after his removal: %v, want 404", err)
	}
	if out, err := cli(ann, "delete", id); err != nil || out != "deleted "+id {
		t.Fatalf("delete: %q %v", out, err)
	}
	if list, err := cli(ann, "list"); err != nil || strings.Contains(list, id) {
		t.Fatalf("ann's list after the deletion: %q %v", list, err)
	}
	if _, err := cli(ann, "frobnicate"); err == nil {
		t.Fatal("an unknown command was accepted")
	}
}

// TestProjectTwoInstances: two binaries on one PostgreSQL. A membership
// changed through A reaches B at once (a project's rows are not events:
// a notification makes B reload it): Bob, added on A, reads the chat on
// B, and his stream on B, open since before, carries its next turn live;
// a chat moved out on A is out of Bob's sight on B (its event tells B);
// Bob removed on A no longer lists the project on B.
func TestProjectTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := freshSchema(t)
	tm := startTeam(t, dsn)
	a := tm.p
	b := start(t, freeAddr(t), dsn, tm.env...)
	ann, bob := tm.ann.key, tm.bob.key

	var p agent.Project
	must(t, ann, "POST", a.url("/agentik/projects"), `{"name":"Launch"}`, &p)
	var c agent.Conversation
	must(t, ann, "POST", a.url("/agentik/conversations"), `{"title":"plan","project":"`+p.ID+`"}`, &c)
	must(t, ann, "POST", a.url("/agentik/conversations/"+c.ID+"/send"), `{"content":[{"type":"text","body":"first"}]}`, nil)
	if code, _ := call(t, bob, "GET", b.url("/agentik/conversations/"+c.ID), ""); code != 404 {
		t.Fatalf("bob, not a member yet, reads the chat on B: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := sse(t, ctx, bob, b.url("/agentik/events/all"), "")

	must(t, ann, "PATCH", a.url("/agentik/projects/"+p.ID), `{"members":[{"user_id":"`+tm.bob.id+`","role":"viewer"}]}`, nil)
	testwait.For(t, "bob reads the chat on B", func() bool {
		code, _ := call(t, bob, "GET", b.url("/agentik/conversations/"+c.ID), "")
		return code == 200
	})
	must(t, ann, "POST", a.url("/agentik/conversations/"+c.ID+"/send"), `{"content":[{"type":"text","body":"second"}]}`, nil)
	for ev := range events {
		if strings.Contains(ev.data, c.ID) && strings.Contains(ev.data, `"turn_ended"`) {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("bob's stream on B did not carry the turn")
	}

	must(t, ann, "PATCH", a.url("/agentik/conversations/"+c.ID), `{"project":""}`, nil)
	testwait.For(t, "the chat moved out, out of bob's sight on B", func() bool {
		code, _ := call(t, bob, "GET", b.url("/agentik/conversations/"+c.ID), "")
		return code == 404
	})
	must(t, ann, "PATCH", a.url("/agentik/projects/"+p.ID), `{"members":[]}`, nil)
	testwait.For(t, "the project gone from bob's list on B", func() bool {
		_, body := call(t, bob, "GET", b.url("/agentik/projects"), "")
		return !strings.Contains(string(body), p.ID)
	})
}
