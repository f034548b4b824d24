package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

func TestReadMessages(t *testing.T) {
	t.Parallel()
	in := "one\n" +
		"two \\\nlines\\\n\n" + // a trailing backslash goes on, even over an empty line
		"\"\"\"\nin a block \\\n\n  indented\n\"\"\"\n" +
		"last"
	out := make(chan string)
	mores := 0
	go readMessages(context.Background(), strings.NewReader(in), out, func() { mores++ })
	var got []string
	for m := range out {
		got = append(got, m)
	}
	want := []string{"one", "two \nlines\n", "in a block \\\n\n  indented", "last"}
	if !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
	if mores != 6 {
		t.Errorf("%d continuation prompts, want 6", mores)
	}
}

// chatEnv points the chat client at addr.
func chatEnv(addr string) func(string) string {
	return func(k string) string {
		if k == "AGENTIK_URL" {
			return "http://" + addr
		}
		return ""
	}
}

// TestChatCtrlC: Ctrl-C during an answer interrupts it and the chat goes
// on; Ctrl-C at the prompt quits. Model text reaches the terminal without
// control sequences.
func TestChatCtrlC(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL)
	stdin, w := io.Pipe()
	defer w.Close()
	var out, errs syncBuffer
	ints := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- runChat(context.Background(), nil, chatEnv(addr), stdin, &out, &errs, ints) }()

	if _, err := io.WriteString(w, "[[tokens=100000 delay=1ms]]\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "t20 ")
	ints <- os.Interrupt
	waitFor(t, &out, "[interrupted]")
	select {
	case err := <-done:
		t.Fatalf("the chat ended on Ctrl-C during a turn: %v", err)
	default:
	}

	if _, err := io.WriteString(w, "[[text=\x1b]0;pwned\x07safe \x1b[2Jtext]]\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "safe text")
	if strings.Contains(out.String(), "\x1b") || strings.Contains(out.String(), "\x07") {
		t.Errorf("control characters reached the terminal: %q", out.String())
	}

	waitPrompt(t, &out)
	ints <- os.Interrupt
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Ctrl-C at the prompt did not quit")
	}
}

// TestChatBinarySignals sends real SIGINTs to `agentik chat`: the first,
// mid-answer, interrupts the turn; the next, at the prompt, ends the
// process with status 0.
func TestChatBinarySignals(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL)
	cmd := exec.Command(binary, "chat", "--server", "http://"+addr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	var out, errs syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := io.WriteString(w, "[[tokens=100000 delay=1ms]]\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "t20 ")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "[interrupted]")
	if _, err := io.WriteString(w, "still here\n"); err != nil {
		t.Fatalf("the chat ended on Ctrl-C during a turn: %v\n%s%s", err, out.String(), errs.String())
	}
	waitFor(t, &out, "You said: still here")
	waitPrompt(t, &out)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, errs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Ctrl-C at the prompt did not quit")
	}
}

// TestChatServerDownNotice: when the server goes away the chat says so,
// and says when it is back.
func TestChatServerDownNotice(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := start(t, addr, db, "OPENAI_BASE_URL="+fakeURL)
	stdin, w := io.Pipe()
	var out, errs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runChat(ctx, nil, chatEnv(addr), stdin, &out, &errs, nil) }()
	defer func() { cancel(); w.Close(); <-done }()
	waitFor(t, &errs, "conversation ")
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	waitFor(t, &errs, "cannot be reached")
	start(t, addr, db, "OPENAI_BASE_URL="+fakeURL)
	waitFor(t, &errs, "[reconnected]")
	if _, err := io.WriteString(w, "back again\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "You said: back again")
}

func TestClientHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"chat", "--help"}, {"tail", "-h"}} {
		var out, errs strings.Builder
		if err := run(context.Background(), args, func(string) string { return "" }, nil, &out, &errs); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "agentik") || errs.Len() != 0 {
			t.Errorf("%v: stdout %q, stderr %q; want the help on stdout", args, out.String(), errs.String())
		}
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"chat", "--help"}, func(string) string { return "" }, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"""`) || !strings.Contains(out.String(), "Ctrl-C") {
		t.Errorf("chat --help does not explain input and keys:\n%s", out.String())
	}
	for _, args := range [][]string{{"--version"}, {"chat", "--version"}} {
		var out strings.Builder
		if err := run(context.Background(), args, func(string) string { return "" }, nil, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "agentik ") {
			t.Errorf("%v = %q", args, out.String())
		}
	}
	// A usage error still goes to stderr.
	var errs strings.Builder
	if err := run(context.Background(), []string{"chat", "--bogus"}, func(string) string { return "" }, nil, io.Discard, &errs); err == nil || !strings.Contains(errs.String(), "usage") {
		t.Errorf("bad flag: err %v, stderr %q", err, errs.String())
	}
}

// waitPrompt waits until the chat is back at its prompt: the output ends
// with "> ".
func waitPrompt(t *testing.T, out *syncBuffer) {
	t.Helper()
	testwait.For(t, "the chat back at its prompt", func() bool { return strings.HasSuffix(out.String(), "\n> ") })
}
