package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecondProcessOnSQLiteRefused starts the real binary twice on one
// SQLite file: the second exits at once, saying the file is in use and by
// which pid, and the first keeps serving.
func TestSecondProcessOnSQLiteRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "agentik.db")
	first := start(t, freeAddr(t), db)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--addr", freeAddr(t), "--db", "sqlite:"+db)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the second process did not refuse to start (err %v):\n%s", err, out)
	}
	if want := fmt.Sprintf("in use by process %d", first.cmd.Process.Pid); !strings.Contains(string(out), want) {
		t.Errorf("the second process says:\n%s\nwant it to say %q", out, want)
	}
	var convs any
	getJSON(t, first.url("/agentik/conversations"), &convs)
}

// TestSecondProcessThroughLinkRefused starts the real binary on a SQLite
// file, then again through a symlink and a hard link to it: the lock is
// the file's, not the path's, so both are refused.
func TestSecondProcessThroughLinkRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "agentik.db")
	first := start(t, freeAddr(t), db)
	sym := filepath.Join(t.TempDir(), "via-symlink.db")
	if err := os.Symlink(db, sym); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "via-hardlink.db")
	if err := os.Link(db, hard); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{sym, hard} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary, "--addr", freeAddr(t), "--db", "sqlite:"+path)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut || !strings.Contains(string(out), "in use by") {
			t.Fatalf("a second process through %s did not refuse to start (err %v):\n%s", path, err, out)
		}
	}
	var convs any
	getJSON(t, first.url("/agentik/conversations"), &convs)
}
