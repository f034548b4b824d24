package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
