package tool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
	"go.uber.org/goleak"
)

// Tests that mostly wait on a child process (node starting, a hung server
// found out and restarted, a group killed) call t.Parallel. Serial stay
// those that t.Setenv, and those whose bound is a few hundred milliseconds
// on a responsive server (TestStdioCallTimeout, TestStdioProgressResetsTimeout,
// TestStdioRestartAfterKill's backoff), which node starts beside them would
// crowd on a loaded machine.

// testServerBin is the mcpserver test command, built once by TestMain.
var testServerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentik-mcpserver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServerBin = filepath.Join(dir, "mcpserver")
	out, err := exec.Command("go", "build", "-o", testServerBin, "./testdata/mcpserver").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/mcpserver: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// events records OnChange calls.
type events struct {
	mu  sync.Mutex
	all []agent.ToolServer
	ch  chan struct{}
}

func newEvents() *events { return &events{ch: make(chan struct{}, 1)} }

func (e *events) on(ts agent.ToolServer) {
	e.mu.Lock()
	e.all = append(e.all, ts)
	e.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	default:
	}
}

func (e *events) states(server string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ts := range e.all {
		if ts.Name == server {
			out = append(out, ts.State)
		}
	}
	return out
}

// waitChange waits for an OnChange of server into state.
func waitChange(t testing.TB, m *Manager, ev *events, server, state string) {
	t.Helper()
	waitUntil(t, m, ev, server, "become "+state, func(s string) bool { return s == state })
}

// waitUntil waits until the state of server meets cond, re-reading it at
// each OnChange (ev).
func waitUntil(t testing.TB, m *Manager, ev *events, server, what string, cond func(state string) bool) {
	t.Helper()
	deadline := time.After(testwait.Timeout)
	for !cond(serverState(m, server).State) {
		select {
		case <-ev.ch:
		case <-deadline:
			t.Fatalf("%s did not %s: %v", server, what, ev.states(server))
		}
	}
}

// stdioConfig is a Config with one stdio server named name running the
// test server with env.
func stdioConfig(name string, env map[string]string) Config {
	return Config{Servers: []ServerConfig{{Name: name, Transport: TransportStdio, Command: testServerBin, Env: env}}}
}

// start starts a Manager that Close ends with the test.
func start(t *testing.T, cfg Config, opt Options) *Manager {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	m, err := Start(t.Context(), cfg, opt)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// testLogger logs to the test's log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

// testWriter writes logs to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// specNames lists the names of the tools the model sees.
func specNames(m *Manager) []string {
	var names []string
	for _, s := range m.Specs(context.Background()) {
		names = append(names, s.Name)
	}
	return names
}

// serverState returns the state of one server.
func serverState(m *Manager, name string) agent.ToolServer {
	for _, s := range m.Servers() {
		if s.Name == name {
			return s
		}
	}
	return agent.ToolServer{}
}

// waitState waits until server name is in state.
func waitState(t testing.TB, m *Manager, name, state string) agent.ToolServer {
	t.Helper()
	var ts agent.ToolServer
	testwait.ForErr(t, fmt.Sprintf("server %s %s", name, state), func() error {
		if ts = serverState(m, name); ts.State != state {
			return fmt.Errorf("now %+v", ts)
		}
		return nil
	})
	return ts
}

// call calls a tool with a generous bound.
func call(t *testing.T, m *Manager, name, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	return m.Call(ctx, name, args)
}

// mustCall calls a tool that must succeed.
func mustCall(t *testing.T, m *Manager, name, args string) string {
	t.Helper()
	out, err := call(t, m, name, args)
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", name, args, err)
	}
	return out
}

// toolErr checks that err is a tool_error whose message contains want.
func toolErr(t *testing.T, err error, want string) {
	t.Helper()
	var ae *agent.Error
	if !errors.As(err, &ae) || ae.Code != agent.CodeToolError {
		t.Fatalf("error %v (%T), want *agent.Error with code tool_error", err, err)
	}
	if !strings.Contains(ae.Message, want) {
		t.Fatalf("error message %q does not contain %q", ae.Message, want)
	}
}
