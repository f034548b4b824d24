//go:build unix

package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
	"github.com/mark3labs/mcp-go/client/transport"
)

func TestStdioEcho(t *testing.T) {
	ev := newEvents()
	m := start(t, stdioConfig("go", nil), Options{OnChange: ev.on})
	ts := waitState(t, m, "go", agent.ToolServerReady)
	if ts.Transport != TransportStdio || ts.Error != "" {
		t.Errorf("server = %+v", ts)
	}
	if !slices.Contains(ts.Tools, "go__echo") {
		t.Errorf("tools %v lack go__echo", ts.Tools)
	}
	var echo agent.ToolSpec
	for _, s := range m.Specs(t.Context()) {
		if s.Name == "go__echo" {
			echo = s
		}
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(echo.Parameters, &schema); err != nil {
		t.Fatalf("schema %s: %v", echo.Parameters, err)
	}
	if echo.Description != "Echoes text." || schema.Type != "object" || schema.Properties["text"] == nil || !slices.Equal(schema.Required, []string{"text"}) {
		t.Errorf("echo spec = %+v, schema %s", echo, echo.Parameters)
	}
	if got := mustCall(t, m, "go__echo", `{"text":"hello"}`); got != "hello" {
		t.Errorf("echo = %q, want hello", got)
	}
	if got := ev.states("go"); len(got) == 0 || got[len(got)-1] != agent.ToolServerReady {
		t.Errorf("events = %v, want … ready", got)
	}
}

func TestStdioCleanEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-parent-secret")
	t.Setenv("AGENTIK_API_KEYS", "k1,k2")
	t.Setenv("LANG", "C.UTF-8")
	m := start(t, stdioConfig("go", map[string]string{"OWN_TOKEN": "own-value"}), Options{})
	waitState(t, m, "go", agent.ToolServerReady)
	out := mustCall(t, m, "go__env", "")
	env := map[string]string{}
	for _, kv := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if _, ok := env["OPENAI_API_KEY"]; ok {
		t.Errorf("the server sees OPENAI_API_KEY")
	}
	if strings.Contains(out, "sk-parent-secret") || strings.Contains(out, "k1,k2") {
		t.Errorf("a secret of ours leaked into the server's environment:\n%s", out)
	}
	if env["OWN_TOKEN"] != "own-value" || env["PATH"] != os.Getenv("PATH") || env["LANG"] != "C.UTF-8" {
		t.Errorf("env = %v, want OWN_TOKEN, PATH and LANG", env)
	}
	for k := range env {
		if !slices.Contains([]string{"PATH", "HOME", "USER", "LANG", "TERM", "OWN_TOKEN"}, k) {
			t.Errorf("unexpected variable %s in the server's environment", k)
		}
	}
}

func TestStdioCwd(t *testing.T) {
	dir := t.TempDir()
	cfg := stdioConfig("go", nil)
	cfg.Servers[0].Cwd = dir
	m := start(t, cfg, Options{})
	waitState(t, m, "go", agent.ToolServerReady)
	// The kernel knows the cwd of the process.
	pid, _ := pids(t, m, "go__pid")
	got, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatalf("read the server's cwd: %v", err)
		}
		t.Skipf("no /proc here (%s): %v", runtime.GOOS, err)
	}
	if got != dir {
		t.Errorf("cwd = %s, want %s", got, dir)
	}
}

// pids calls the pid tool: the server's pid and process group.
func pids(t *testing.T, m *Manager, tool string) (pid, pgid int) {
	t.Helper()
	out := mustCall(t, m, tool, "")
	if _, err := fmt.Sscan(out, &pid, &pgid); err != nil {
		t.Fatalf("pid tool said %q: %v", out, err)
	}
	return pid, pgid
}

// groupAlive lists the live (not zombie) processes of a process group.
func groupAlive(t *testing.T, pgid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var alive []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			alive = append(alive, s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return alive
}

func TestStdioRestartAfterKill(t *testing.T) {
	ev := newEvents()
	m := start(t, stdioConfig("go", map[string]string{"MCPSERVER_GRANDCHILD": "1"}), Options{
		OnChange: ev.on,
		// Long enough to observe the server down.
		RestartBackoff: 1500 * time.Millisecond,
	})
	waitState(t, m, "go", agent.ToolServerReady)
	pid, pgid := pids(t, m, "go__pid")
	if pid != pgid {
		t.Fatalf("pid %d, pgid %d: the server does not lead its own process group", pid, pgid)
	}
	if ours := syscall.Getpgrp(); ours == pgid {
		t.Fatalf("the server shares our process group")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ts := waitState(t, m, "go", agent.ToolServerRestarting)
	if !strings.Contains(ts.Error, "killed") {
		t.Errorf("error %q does not say the server was killed", ts.Error)
	}

	// Down: a call fails at once.
	began := time.Now()
	_, err := call(t, m, "go__echo", `{"text":"x"}`)
	toolErr(t, err, "restarting")
	if d := time.Since(began); d > time.Second {
		t.Errorf("a call to a server that is down took %s", d)
	}
	// Its tools stay listed meanwhile.
	if !slices.Contains(specNames(m), "go__echo") {
		t.Errorf("specs lost go__echo while restarting: %v", specNames(m))
	}
	// The grandchild died with its leader.
	testwait.For(t, "the old process group to die", func() bool { return len(groupAlive(t, pgid)) == 0 })

	waitState(t, m, "go", agent.ToolServerReady)
	if got := mustCall(t, m, "go__echo", `{"text":"back"}`); got != "back" {
		t.Errorf("echo after restart = %q", got)
	}
	if pid2, _ := pids(t, m, "go__pid"); pid2 == pid {
		t.Errorf("same pid %d after restart", pid)
	}
	states := strings.Join(ev.states("go"), ",")
	if !strings.Contains(states, "ready,restarting,ready") {
		t.Errorf("state events %s, want ready,restarting,ready", states)
	}
}

func TestStdioCrashMidCall(t *testing.T) {
	m := start(t, stdioConfig("go", nil), Options{RestartBackoff: 50 * time.Millisecond})
	waitState(t, m, "go", agent.ToolServerReady)
	_, err := call(t, m, "go__crash", "{}")
	toolErr(t, err, "crashing on purpose")
	toolErr(t, err, "exit status 3")
	testwait.For(t, "echo to work again", func() bool {
		out, err := call(t, m, "go__echo", `{"text":"again"}`)
		return err == nil && out == "again"
	})
}

func TestStdioCloseKillsGroup(t *testing.T) {
	t.Parallel()
	m, err := Start(t.Context(), stdioConfig("go", map[string]string{"MCPSERVER_GRANDCHILD": "1"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, m, "go", agent.ToolServerReady)
	_, pgid := pids(t, m, "go__pid")
	if alive := groupAlive(t, pgid); len(alive) < 2 {
		t.Fatalf("group %d = %v, want the server and its grandchild", pgid, alive)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if alive := groupAlive(t, pgid); len(alive) > 0 {
		t.Errorf("after Close, group %d still has %v", pgid, alive)
	}
	if err := syscall.Kill(-pgid, 0); err == nil {
		// Only zombies may remain, reaped by init.
		t.Logf("kill(-%d, 0) still finds the group (zombies): %v", pgid, err)
	} else if !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(-%d, 0) = %v, want ESRCH", pgid, err)
	}
}

func TestStdioCallTimeout(t *testing.T) {
	m := start(t, stdioConfig("go", nil), Options{CallTimeout: 300 * time.Millisecond})
	waitState(t, m, "go", agent.ToolServerReady)
	_, err := call(t, m, "go__sleep", `{"ms":0}`)
	toolErr(t, err, "no answer or progress within 300ms")
	// The server is still fine.
	if got := mustCall(t, m, "go__echo", `{"text":"ok"}`); got != "ok" {
		t.Errorf("echo = %q", got)
	}
	if s := serverState(m, "go"); s.State != agent.ToolServerReady {
		t.Errorf("state after a timeout = %+v", s)
	}
}

func TestStdioProgressResetsTimeout(t *testing.T) {
	m := start(t, stdioConfig("go", nil), Options{CallTimeout: 800 * time.Millisecond, MaxCallTimeout: 3 * time.Second})
	waitState(t, m, "go", agent.ToolServerReady)
	// Two and a half idle timeouts long, but with progress every 50ms.
	if got := mustCall(t, m, "go__sleep", `{"ms":2000,"progress_ms":50}`); got != "slept" {
		t.Errorf("sleep = %q", got)
	}
	// Progress forever: the hard maximum ends it.
	_, err := call(t, m, "go__sleep", `{"ms":0,"progress_ms":50}`)
	toolErr(t, err, "still running after 3s")
}

func TestStdioResultCapped(t *testing.T) {
	m := start(t, stdioConfig("go", nil), Options{MaxResultBytes: 1000})
	waitState(t, m, "go", agent.ToolServerReady)
	out := mustCall(t, m, "go__big", `{"n":5000}`)
	if len(out) > 1000 || !utf8.ValidString(out) || !strings.Contains(out, "[truncated:") {
		t.Errorf("result of %d bytes (valid UTF-8: %v) ends %q", len(out), utf8.ValidString(out), out[max(0, len(out)-60):])
	}
}

func TestStdioToolErrors(t *testing.T) {
	m := start(t, stdioConfig("go", nil), Options{})
	waitState(t, m, "go", agent.ToolServerReady)
	_, err := call(t, m, "go__fail", "{}")
	toolErr(t, err, "it went wrong")
	_, err = call(t, m, "go__nope", "{}")
	toolErr(t, err, `unknown tool "go__nope"`)
	_, err = call(t, m, "go__echo", `["text"]`)
	toolErr(t, err, "must be a JSON object")
	_, err = call(t, m, "go__echo", `{"text":`)
	toolErr(t, err, "must be a JSON object")
}

func TestStdioListChanged(t *testing.T) {
	m := start(t, stdioConfig("go", nil), Options{})
	waitState(t, m, "go", agent.ToolServerReady)
	mustCall(t, m, "go__add_tool", `{"name":"fresh"}`)
	testwait.For(t, "go__fresh in the specs", func() bool { return slices.Contains(specNames(m), "go__fresh") })
	if got := mustCall(t, m, "go__fresh", "{}"); got != "I am fresh" {
		t.Errorf("fresh = %q", got)
	}
	if !slices.Contains(serverState(m, "go").Tools, "go__fresh") {
		t.Errorf("Servers() lacks go__fresh")
	}
}

func TestStdioPagination(t *testing.T) {
	m := start(t, stdioConfig("go", map[string]string{"MCPSERVER_PAGE_SIZE": "3", "MCPSERVER_EXTRA_TOOLS": "10"}), Options{})
	ts := waitState(t, m, "go", agent.ToolServerReady)
	if len(ts.Tools) != 19 || !slices.Contains(ts.Tools, "go__extra09") || !slices.Contains(ts.Tools, "go__echo") {
		t.Errorf("%d tools: %v, want the 9 tools and 10 extras", len(ts.Tools), ts.Tools)
	}
}

func TestStdioFailedToStart(t *testing.T) {
	cfg := Config{Servers: []ServerConfig{
		{Name: "missing", Transport: TransportStdio, Command: "agentik-no-such-command"},
		{Name: "off", Transport: TransportStdio, Command: testServerBin, Disabled: true},
	}}
	m := start(t, cfg, Options{})
	ts := waitState(t, m, "missing", agent.ToolServerFailed)
	if !strings.Contains(ts.Error, "agentik-no-such-command") {
		t.Errorf("error %q does not name the command", ts.Error)
	}
	if s := serverState(m, "off"); s.State != agent.ToolServerDisabled || s.Tools == nil {
		t.Errorf("disabled server = %+v", s)
	}
	if len(m.Specs(t.Context())) != 0 {
		t.Errorf("specs = %v, want none", specNames(m))
	}
}

func TestStdioExitsAtStart(t *testing.T) {
	// A server that dies before the handshake says why.
	cfg := Config{Servers: []ServerConfig{{Name: "sh", Transport: TransportStdio, Command: "sh", Args: []string{"-c", "echo boom >&2; exit 7"}}}}
	m := start(t, cfg, Options{StartTimeout: 5 * time.Second})
	ts := waitState(t, m, "sh", agent.ToolServerFailed)
	if !strings.Contains(ts.Error, "boom") || !strings.Contains(ts.Error, "exit status 7") {
		t.Errorf("error %q, want exit status 7 and boom", ts.Error)
	}
}

func TestSecretsRedactedFromErrors(t *testing.T) {
	// The server prints its secret and dies: the error must not show it.
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"leaky":{"command":"sh","args":["-c","echo token is $TOKEN >&2; exit 1"],"env":{"TOKEN":"${LEAKY_TOKEN}"}}}}`),
		func(k string) string { return map[string]string{"LEAKY_TOKEN": "tok-123456"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	m := start(t, cfg, Options{StartTimeout: 5 * time.Second})
	ts := waitState(t, m, "leaky", agent.ToolServerFailed)
	if strings.Contains(ts.Error, "tok-123456") || !strings.Contains(ts.Error, "token is [redacted]") {
		t.Errorf("error %q, want the token redacted", ts.Error)
	}
}

// BenchmarkStdioCall measures one echo round trip to a stdio server.
func BenchmarkStdioCall(b *testing.B) {
	ev := newEvents()
	m, err := Start(b.Context(), stdioConfig("go", nil), Options{OnChange: ev.on})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	waitChange(b, m, ev, "go", agent.ToolServerReady)
	for b.Loop() {
		if _, err := m.Call(b.Context(), "go__echo", `{"text":"x"}`); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdioRestart measures kill -9 to tools callable again, with the
// default first backoff (held there: in a crash loop it would double).
func BenchmarkStdioRestart(b *testing.B) {
	ev := newEvents()
	m, err := Start(b.Context(), stdioConfig("go", nil), Options{OnChange: ev.on, RestartBackoff: DefaultRestartBackoff, MaxBackoff: DefaultRestartBackoff})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ready := func() {
		waitChange(b, m, ev, "go", agent.ToolServerReady)
		if _, err := m.Call(b.Context(), "go__echo", `{"text":"x"}`); err != nil {
			b.Fatalf("ready, and echo: %v", err)
		}
	}
	ready()
	for b.Loop() {
		out, err := m.Call(b.Context(), "go__pid", "")
		if err != nil {
			b.Fatal(err)
		}
		var pid int
		fmt.Sscan(out, &pid)
		syscall.Kill(pid, syscall.SIGKILL)
		// Wait until the supervisor has seen it die, then until it is back.
		waitUntil(b, m, ev, "go", "leave ready", func(s string) bool { return s != agent.ToolServerReady })
		ready()
	}
}

// TestStdioHungServerRestarts: a server that stops answering altogether is
// found out by the probe after a timed-out call, killed and restarted; a
// slow call on a responsive server (TestStdioCallTimeout) is not.
func TestStdioHungServerRestarts(t *testing.T) {
	t.Parallel()
	m := start(t, stdioConfig("go", nil), Options{CallTimeout: 300 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond})
	waitState(t, m, "go", agent.ToolServerReady)
	before := mustCall(t, m, "go__pid", `{}`)
	_, err := call(t, m, "go__freeze", `{}`)
	toolErr(t, err, "no answer or progress within 300ms")
	testwait.For(t, "the hung server restarted", func() bool {
		s := serverState(m, "go")
		return s.State == agent.ToolServerReady && callOK(m, "go__pid") != "" && callOK(m, "go__pid") != before
	})
	if got := mustCall(t, m, "go__echo", `{"text":"back"}`); got != "back" {
		t.Errorf("echo after the restart = %q", got)
	}
}

// TestStdioHungDuringToolRefresh: a server that hangs while its tools are
// being listed again (after a tools/list_changed, or the acknowledgement of
// the listen stream, which can come late) is restarted as soon as a call
// finds it hung, not once that listing's own timeout (a minute) has passed.
func TestStdioHungDuringToolRefresh(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "frozen")
	m := start(t, stdioConfig("go", map[string]string{"MCPSERVER_FROZEN_MARK": mark}),
		Options{CallTimeout: 300 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond, StartTimeout: time.Minute})
	waitState(t, m, "go", agent.ToolServerReady)
	before := mustCall(t, m, "go__pid", `{}`)
	sup := m.servers[0]
	sup.mu.Lock()
	sess := sup.sess
	sup.mu.Unlock()

	errc := make(chan error, 1)
	go func() {
		_, err := m.Call(t.Context(), "go__freeze", `{}`)
		errc <- err
	}()
	testwait.For(t, "the server frozen", func() bool {
		_, err := os.Stat(mark)
		return err == nil
	})
	sess.refresh <- struct{}{} // its tools/list now gets no answer
	toolErr(t, <-errc, "no answer or progress within 300ms")
	testwait.For(t, "the hung server restarted", func() bool {
		s := serverState(m, "go")
		return s.State == agent.ToolServerReady && callOK(m, "go__pid") != "" && callOK(m, "go__pid") != before
	})
}

// callOK calls a tool and returns its result, or "" on error.
func callOK(m *Manager, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := m.Call(ctx, name, `{}`)
	if err != nil {
		return ""
	}
	return res
}

// TestStdioToolFilterAndApproval: allowedTools / excludedTools decide what
// the model is offered; NeedsApproval follows requireApproval by the
// server's own tool names.
func TestStdioToolFilterAndApproval(t *testing.T) {
	cfg := stdioConfig("go", nil)
	cfg.Servers[0].AllowedTools = []string{"echo", "pid", "fail"}
	cfg.Servers[0].ExcludedTools = []string{"fail"}
	cfg.Servers[0].Approval = Approval{Except: []string{"pid"}}
	m := start(t, cfg, Options{})
	waitState(t, m, "go", agent.ToolServerReady)
	var names []string
	for _, s := range m.Specs(t.Context()) {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"go__echo", "go__pid"}) {
		t.Errorf("offered %v, want go__echo and go__pid", names)
	}
	if _, err := m.Call(t.Context(), "go__fail", `{}`); err == nil {
		t.Error("an excluded tool could be called")
	}
	if !m.NeedsApproval("go__pid") || m.NeedsApproval("go__echo") || m.NeedsApproval("go__nope") {
		t.Errorf("NeedsApproval: pid %v, echo %v, unknown %v; want true, false, false", m.NeedsApproval("go__pid"), m.NeedsApproval("go__echo"), m.NeedsApproval("go__nope"))
	}
}

// A stdio pipe that broke while the dead server's group was still being
// killed (an orphan not yet reaped keeps the group alive for up to
// groupGrace) fails the session with how the process ended, not with the
// transport's "closed": the leader's reaping is what is waited for. The
// group is gone only once the session waits for it (awaitGroup), so a
// session that waited for the group under a bound of its own would end
// with "closed".
func TestBrokenPipeWaitsForTheReapedLeader(t *testing.T) {
	cmd := exec.Command("sh", "-c", "kill -9 $$")
	_ = cmd.Run()
	p := &process{cmd: cmd, reaped: make(chan struct{}), exited: make(chan struct{}), drained: make(chan struct{})}
	p.waitErr = errors.New("signal: killed")
	close(p.reaped)
	close(p.drained)
	p.awaitGroup = func() { close(p.exited) }
	s := newSession(t.Context())
	s.proc = p
	s.failIfBroken(t.Context(), &transport.Error{Err: errors.New("transport closed")})
	<-s.done
	if !strings.Contains(s.err.Error(), "killed") {
		t.Errorf("session failed with %q, want how the process ended (killed)", s.err)
	}
}
