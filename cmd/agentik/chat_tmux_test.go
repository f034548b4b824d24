package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// tmuxTerm is `agentik chat` in a real terminal: a tmux session on a
// server (socket) of the test's own.
type tmuxTerm struct {
	t       *testing.T
	socket  string
	changed chan struct{} // the pane wrote something (pipe-pane), capacity 1
}

func newTmux(t *testing.T, command string) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the terminal tests: apt-get install -y tmux")
	}
	tm := &tmuxTerm{t: t, socket: fmt.Sprintf("agentik-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	// The command's last words keep the pane open after it exits, so its
	// last message can be read.
	tm.run("new-session", "-d", "-s", "chat", "-x", "120", "-y", "40", command+"; sleep 60")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	// Everything the pane prints also goes through a FIFO, so waitScreen
	// looks at the screen again when something was written, not on a
	// timer. Opened read-write, the FIFO needs no writer to open, and
	// closing it ends the reader.
	fifo := filepath.Join(t.TempDir(), "pane")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	tm.changed = make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			select {
			case tm.changed <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { f.Close(); <-done })
	tm.run("pipe-pane", "-O", "-t", "chat", "cat > "+fifo)
	return tm
}

func (tm *tmuxTerm) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// screen is what the pane shows, wrapped lines joined.
func (tm *tmuxTerm) screen() string { return tm.run("capture-pane", "-p", "-J", "-t", "chat") }

// waitScreen waits until the screen satisfies ok.
func (tm *tmuxTerm) waitScreen(what string, ok func(string) bool) string {
	tm.t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		s := tm.screen()
		if ok(s) {
			return s
		}
		select {
		case <-tm.changed:
		case <-timeout.C:
			tm.t.Fatalf("waiting for %s; the terminal shows:\n%s", what, tm.screen())
		}
	}
}

func chatCommand(addr string) string {
	return fmt.Sprintf("env -u AGENTIK_API_KEY -u AGENTIK_URL %s chat --server http://%s", binary, addr)
}

// TestChatTerminalPaste: a block of lines pasted into the terminal
// (bracketed paste) is one message, sent by Enter; the answer starts on a
// line of its own, not after the prompt.
func TestChatTerminalPaste(t *testing.T) {
	t.Parallel()
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL)
	tm := newTmux(t, chatCommand(addr))
	tm.waitScreen("the prompt", func(s string) bool { return strings.Contains(s, "conversation ") && strings.Contains(s, "> ") })

	tm.run("set-buffer", "-b", "block", "first line\nsecond line\nthird line")
	tm.run("paste-buffer", "-p", "-d", "-b", "block", "-t", "chat")
	tm.run("send-keys", "-t", "chat", "Enter")
	screen := tm.waitScreen("the answer", func(s string) bool { return strings.Contains(s, "tokens)") })

	// The turn's request; the title request that follows it quotes the
	// conversation.
	var users []string
	for _, m := range fake.Requests()[0].Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if len(users) != 1 || users[0] != "first line\nsecond line\nthird line" {
		t.Errorf("the model got the user messages %q, want the pasted block as one", users)
	}
	if strings.Contains(screen, "^[") || strings.Contains(screen, "200~") {
		t.Errorf("the paste markers show on the screen:\n%s", screen)
	}
	for _, line := range strings.Split(screen, "\n") {
		if strings.Contains(line, "You said:") && strings.HasPrefix(line, ">") {
			t.Errorf("the answer is printed on the prompt's line %q:\n%s", line, screen)
		}
	}
}

// TestChatTerminalNeedsKey: against a server that needs a key, a chat
// without one says which variable to set, not that the server is down.
func TestChatTerminalNeedsKey(t *testing.T) {
	t.Parallel()
	_, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	start(t, addr, filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "AGENTIK_API_KEYS=k-secret")
	tm := newTmux(t, chatCommand(addr))
	screen := tm.waitScreen("the refusal", func(s string) bool { return strings.Contains(s, "401") })
	if !strings.Contains(screen, "set AGENTIK_API_KEY") {
		t.Errorf("the refusal does not say to set AGENTIK_API_KEY:\n%s", screen)
	}
	if strings.Contains(screen, "cannot reach") {
		t.Errorf("a server that answered 401 is called unreachable:\n%s", screen)
	}
}

func TestReadMessagesBracketedPaste(t *testing.T) {
	t.Parallel()
	in := "before\n\x1b[200~pasted\n\"\"\"\nends with \\\n  last\x1b[201~ typed after\nafter\n"
	out := make(chan string)
	go readMessages(t.Context(), strings.NewReader(in), out, func() {})
	var got []string
	for m := range out {
		got = append(got, m)
	}
	want := []string{"before", "pasted\n\"\"\"\nends with \\\n  last typed after", "after"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages %q, want %q", got, want)
	}
}

// TestHelpNamesEveryVariable: --help's table is the one list of settings
// (the README's says so): every AGENTIK_ variable the code reads is in it.
func TestHelpNamesEveryVariable(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`"(AGENTIK_[A-Z0-9_]+)"`)
	seen := map[string]string{}
	for _, root := range []string{".", "../../internal"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				seen[m[1]] = p
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for v, where := range seen {
		if v == "AGENTIK_BENCH_ROLE" { // the benchmark's own child processes
			continue
		}
		if !regexp.MustCompile(`\b` + v + `\b`).MatchString(usageText) {
			t.Errorf("%s (read in %s) is missing from agentik --help (usageText in config.go)", v, where)
		}
	}
}

// TestVersionNamesRevision: a binary built from a checkout says which
// commit it is (debug.ReadBuildInfo's vcs.revision), whatever GOFLAGS say.
// It builds from a clone of this checkout's commit, as a user's checkout
// is (go stamps no revision in a git worktree).
func TestVersionNamesRevision(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "src"), filepath.Join(dir, "agentik")
	if out, err := exec.Command("git", "clone", "--quiet", "--no-checkout", "../..", src).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	if out, err := exec.Command("git", "-C", src, "checkout", "--quiet", strings.TrimSpace(string(head))).CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v\n%s", err, out)
	}
	build := exec.Command("go", "build", "-buildvcs=true", "-trimpath", "-o", bin, "./cmd/agentik") // -trimpath: as TestMain's, so only the link is new
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	want, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), strings.TrimSpace(string(want))) {
		t.Errorf("--version = %q, want it to name the commit %s", out, want)
	}
}

// TestHelpListsEverySubcommand: every client mode run dispatches on is
// named in agentik --help, so a newcomer finds `agentik user` there.
func TestHelpListsEverySubcommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("run.go")
	if err != nil {
		t.Fatal(err)
	}
	cases := regexp.MustCompile(`(?m)^\t\tcase "([a-z]+)"`).FindAllStringSubmatch(string(b), -1)
	if len(cases) < 5 {
		t.Fatalf("found %d subcommands in run.go, want the switch's cases", len(cases))
	}
	for _, m := range cases {
		if !regexp.MustCompile(`(?m)^  agentik ` + m[1] + `\b`).MatchString(usageText) {
			t.Errorf("agentik %s is missing from agentik --help (usageText in config.go)", m[1])
		}
	}
}

// TestREADMEListsEverySetting: every AGENTIK_ variable of agentik --help
// is in the README, where a person setting agentik up reads.
func TestREADMEListsEverySetting(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range regexp.MustCompile(`AGENTIK_[A-Z_]+`).FindAllString(usageText, -1) {
		if v == "AGENTIK_EXPERIMENTAL_RELAY" { // a benchmark's sketch, kept out of the README on purpose
			continue
		}
		if !regexp.MustCompile(`\b` + v + `\b`).Match(b) {
			t.Errorf("%s (in agentik --help) is missing from README.md", v)
		}
	}
}
