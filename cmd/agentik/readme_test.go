package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// teamSection is the README section whose first sh block
// TestREADMETeamSectionRuns pastes into a shell.
const teamSection = "## A team on one server: accounts, sign-in, budgets"

// readmeBlock is the first ```sh block of the README's section heading:
// its commands, a line ending in a backslash joined with the next.
func readmeBlock(t *testing.T, readme, heading string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README.md's section %q has no ```sh block", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	cont := ""
	for _, l := range strings.Split(block, "\n") {
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\")
			continue
		}
		if l = strings.TrimSpace(cont + l); l != "" {
			lines = append(lines, l)
		}
		cont = ""
	}
	return lines
}

// shell is a bash reading lines from the test as from a person's paste.
type shell struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    chan string // stdout's lines
	stderr *syncBuffer
}

// shellDone ends the output of one line: its exit status follows.
const shellDone = "__readme_test_status__"

func newShell(t *testing.T, dir string, env []string) *shell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its background jobs are killed with it
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sh := &shell{t: t, cmd: cmd, in: in, out: make(chan string, 100), stderr: &syncBuffer{}}
	cmd.Stderr = sh.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(sh.out)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			sh.out <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return sh
}

// run runs line in the shell and returns what it printed and its exit
// status.
func (sh *shell) run(line string) (string, int) {
	sh.t.Helper()
	if _, err := fmt.Fprintf(sh.in, "%s\nprintf '\\n%s %%d\\n' $?\n", line, shellDone); err != nil {
		sh.t.Fatalf("%s: %v", line, err)
	}
	var out []string
	timeout := time.NewTimer(testwait.Timeout) // a bound for a broken build
	defer timeout.Stop()
	for {
		select {
		case l, ok := <-sh.out:
			if !ok {
				sh.t.Fatalf("the shell ended during %q; its stderr:\n%s", line, sh.stderr)
			}
			if rest, ok := strings.CutPrefix(l, shellDone+" "); ok {
				var status int
				fmt.Sscan(rest, &status)
				// The line before the status is the printf's own newline.
				return strings.TrimSuffix(strings.Join(out, "\n"), "\n"), status
			}
			out = append(out, l)
		case <-timeout.C:
			sh.t.Fatalf("%q has not ended after %v; its stderr:\n%s", line, testwait.Timeout, sh.stderr)
		}
	}
}

// TestREADMETeamSectionRuns: the commands of the README's team section,
// pasted into a shell in order with the agentik binary on PATH, make the
// team they say: every line succeeds, a placeholder (<ann's id>) taken
// from what an earlier line printed, and each line does what its comment
// says (Ann's key works until she is disabled, the project has Bob).
func TestREADMETeamSectionRuns(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	runREADMETeam(t, readmeBlock(t, string(b), teamSection))
}

// runREADMETeam runs lines as TestREADMETeamSectionRuns says.
func runREADMETeam(t *testing.T, lines []string) {
	t.Helper()
	_, fakeURL := llmtest.NewHTTPServer(t)
	home, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	// The README says to set AGENTIK_URL when the server listens
	// elsewhere than 127.0.0.1:8080; the test's own port is such a place.
	env := []string{
		"PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"AGENTIK_ADDR=" + addr,
		"AGENTIK_URL=" + base,
		"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake-model",
	}
	if m := os.Getenv("AGENTIK_STORE_MODE"); m != "" {
		env = append(env, "AGENTIK_STORE_MODE="+m)
	}
	if filepath.Base(binary) != "agentik" {
		t.Fatalf("the test binary %s is not named agentik", binary)
	}
	sh := newShell(t, home, env)

	// get is a GET of the server with key: its status and decoded body.
	get := func(path, key string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	var adminKey, annKey, annID, projectID string
	// checks are what a line's effect must be, by what the line runs;
	// each must have been run when the block ends.
	checks := []struct {
		what  string
		match *regexp.Regexp
		check func(line, out string)
		done  bool
	}{
		{"the server starts in the background", regexp.MustCompile(`^agentik\s*&`), func(string, string) {
			pid, _ := sh.run(`echo "$!"`)
			testwait.ForErr(t, "the README's agentik & to listen", func() error {
				if !strings.Contains(sh.stderr.String(), "msg=listening addr="+addr+" ") {
					return fmt.Errorf("agentik (pid %s) has not logged that it listens on %s; the shell's stderr:\n%s", pid, addr, sh.stderr)
				}
				return nil
			})
		}, false},
		{"the first key is an admin's and turns authentication on", regexp.MustCompile(`^export AGENTIK_API_KEY=`), func(string, string) {
			adminKey, _ = sh.run(`printf '%s\n' "$AGENTIK_API_KEY"`)
			if st, me := get("/agentik/me", adminKey); st != 200 || me["role"] != "admin" {
				t.Errorf("GET /agentik/me with the first key: %d %v, want 200 and an admin", st, me)
			}
			if st, _ := get("/agentik/me", ""); st != http.StatusUnauthorized {
				t.Errorf("GET /agentik/me without a key after the first: %d, want 401", st)
			}
		}, false},
		{"Ann is added", regexp.MustCompile(`^agentik user add Ann\b`), func(_, out string) { annID = out }, false},
		{"Ann's key works", regexp.MustCompile(`^agentik user key \S+ `), func(_, out string) {
			annKey = out
			if st, me := get("/agentik/me", annKey); st != 200 || me["id"] != annID || me["role"] != "member" {
				t.Errorf("GET /agentik/me with Ann's key %q: %d %v, want 200, Ann (%s), a member", annKey, st, me, annID)
			}
			if st, models := get("/v1/models", annKey); st != 200 {
				t.Errorf("GET /v1/models with Ann's key: %d %v, want 200", st, models)
			}
		}, false},
		{"the list shows Ann", regexp.MustCompile(`^agentik user list\b`), func(_, out string) {
			if !regexp.MustCompile(`(?m)^` + annID + `\s+Ann\s+ann@example\.com\s+member\s+active`).MatchString(out) {
				t.Errorf("agentik user list does not show Ann (%s) active:\n%s", annID, out)
			}
		}, false},
		{"Ann's key stops", regexp.MustCompile(`^agentik user disable\b`), func(string, string) {
			if st, _ := get("/agentik/me", annKey); st != http.StatusUnauthorized {
				t.Errorf("GET /agentik/me with a disabled user's key: %d, want 401", st)
			}
			if st, _ := get("/v1/models", annKey); st != http.StatusUnauthorized {
				t.Errorf("GET /v1/models with a disabled user's key: %d, want 401", st)
			}
		}, false},
		{"the project is made", regexp.MustCompile(`^agentik project add Launch\b`), func(_, out string) {
			projectID = out
			if st, p := get("/agentik/projects/"+projectID, adminKey); st != 200 || p["name"] != "Launch" || p["instructions"] != "Answer as the launch team." {
				t.Errorf("GET /agentik/projects/%s: %d %v, want Launch with its instructions", projectID, st, p)
			}
		}, false},
		{"Bob is a viewer of the project", regexp.MustCompile(`^agentik project member add\b`), func(string, string) {
			st, p := get("/agentik/projects/"+projectID, adminKey)
			_, users := get("/agentik/users", adminKey)
			bob := ""
			for _, u := range users["users"].([]any) {
				if u := u.(map[string]any); u["email"] == "bob@example.com" {
					bob, _ = u["id"].(string)
				}
			}
			if st != 200 || fmt.Sprint(p["members"]) != fmt.Sprint([]any{map[string]any{"user_id": bob, "role": "viewer"}}) {
				t.Errorf("GET /agentik/projects/%s: %d members %v, want Bob (%q) a viewer", projectID, st, p["members"], bob)
			}
		}, false},
	}

	comment := regexp.MustCompile(`\s+#\s.*$`)
	placeholder := regexp.MustCompile(`<([^<>]+)>`)
	type printed struct{ command, out string }
	var prints []printed // the lines whose comment says they print something
	for _, line := range lines {
		command := comment.ReplaceAllString(line, "")
		// A placeholder is what the latest line that printed something
		// and names the placeholder's words printed (<ann's id>: the line
		// adding Ann; <id>: the latest one that printed).
		var unresolved []string
		run := placeholder.ReplaceAllStringFunc(command, func(ph string) string {
			var words []string
			for _, w := range strings.Fields(strings.ToLower(strings.Trim(ph, "<>"))) {
				if w = strings.TrimSuffix(w, "'s"); w != "id" {
					words = append(words, w)
				}
			}
			for i := len(prints) - 1; i >= 0; i-- {
				named := strings.ToLower(placeholder.ReplaceAllString(prints[i].command, ""))
				all := true
				for _, w := range words {
					all = all && strings.Contains(named, w)
				}
				if all {
					return prints[i].out
				}
			}
			unresolved = append(unresolved, ph)
			return ph
		})
		if len(unresolved) > 0 {
			t.Fatalf("README line %q: no earlier line printed %v", line, unresolved)
		}
		out, status := sh.run(run)
		if status != 0 {
			t.Fatalf("README line %q (run as %q) failed with status %d; it printed %q; the shell's stderr:\n%s", line, run, status, out, sh.stderr)
		}
		if strings.Contains(line, "# prints") {
			if strings.TrimSpace(out) == "" || strings.Contains(strings.TrimSpace(out), "\n") {
				t.Fatalf("README line %q says it prints something for later lines; it printed %q", line, out)
			}
			prints = append(prints, printed{command, strings.TrimSpace(out)})
		}
		for i := range checks {
			if checks[i].match.MatchString(command) {
				checks[i].check(line, strings.TrimSpace(out))
				checks[i].done = true
			}
		}
	}
	for _, c := range checks {
		if !c.done {
			t.Errorf("no README line checked: %s", c.what)
		}
	}
	// The server stops as a person's would.
	if out, status := sh.run("kill %1 && wait"); status != 143 && status != 0 {
		t.Errorf("kill %%1 && wait: status %d, %q; stderr:\n%s", status, out, sh.stderr)
	}
}

// TestClientWaitsForAStartingServer: a client command run while the
// server on this machine is still starting (the README's `agentik &` and
// the next line, pasted) says it waits and succeeds once the server
// listens, where it failed with "connection refused".
func TestClientWaitsForAStartingServer(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cmd := exec.Command(binary, "user", "list")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AGENTIK_URL=http://" + addr}
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	testwait.ForErr(t, "agentik user list to say it waits for the server", func() error {
		select {
		case err := <-exited:
			t.Fatalf("agentik user list ended before the server started: %v; stderr: %s", err, stderr)
		default:
		}
		if !strings.Contains(stderr.String(), "waiting for the server at http://"+addr) {
			return fmt.Errorf("stderr: %q", stderr)
		}
		return nil
	})
	start(t, addr, filepath.Join(t.TempDir(), "agentik.db"))
	if err := <-exited; err != nil {
		t.Fatalf("agentik user list: %v; stderr: %s", err, stderr)
	}
	if !regexp.MustCompile(`(?m)^local\s+local\s+admin`).MatchString(stdout.String()) {
		t.Errorf("agentik user list printed %q, want the admin local", stdout)
	}
}
