//go:build unix

package tool

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// The tests below run @modelcontextprotocol/server-everything, the MCP
// reference server from npm (pinned in package.json), over stdio and HTTP.

// everything returns the repository root and the server's entry point. A
// missing install fails the test: CI must run `npm ci`.
func everything(t *testing.T) (root, entry string) {
	t.Helper()
	if os.Getenv("AGENTIK_TEST_NO_NODE") == "1" {
		t.Skip("AGENTIK_TEST_NO_NODE=1")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	entry = filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("node_modules/@modelcontextprotocol/server-everything is missing: run `npm ci` in %s (or set AGENTIK_TEST_NO_NODE=1 to skip the tests that need Node): %v", root, err)
	}
	for _, cmd := range []string{"node", "npx"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Fatalf("%s is not on PATH: install Node.js and run `npm ci` (or set AGENTIK_TEST_NO_NODE=1): %v", cmd, err)
		}
	}
	return root, entry
}

// sessionPID is the pid of a ready stdio server's process (its group's).
func sessionPID(m *Manager, name string) int {
	for _, s := range m.servers {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if s.cfg.Name == name && sess != nil && sess.proc != nil {
			return sess.proc.pid()
		}
	}
	return 0
}

func TestEverythingStdioNpx(t *testing.T) {
	root, _ := everything(t)
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	// The way people configure it: an npx wrapper (npm exec → sh → node).
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"everything":{"command":"npx","args":["-y","@modelcontextprotocol/server-everything","stdio"],"cwd":"`+root+`"}}}`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Start(t.Context(), cfg, Options{Logger: testLogger(t), RestartBackoff: 100 * time.Millisecond, CallTimeout: everythingIdle})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// Ready, with its tools: a snapshot taken between the state's change
	// and the tools' rebuild shows ready with the tools before (none).
	testwait.ForErr(t, "everything ready with echo and get-env", func() error {
		ts := serverState(m, "everything")
		if ts.State != agent.ToolServerReady || !slices.Contains(ts.Tools, "everything__echo") || !slices.Contains(ts.Tools, "everything__get-env") {
			return fmt.Errorf("now %+v", ts)
		}
		return nil
	})
	t.Logf("protocol %s", protocolOf(m, "everything"))
	if got := mustCall(t, m, "everything__echo", `{"message":"hello from agentik"}`); !strings.Contains(got, "hello from agentik") {
		t.Errorf("echo = %q", got)
	}
	longRunning(t, m, "everything")
	if env := mustCall(t, m, "everything__get-env", "{}"); strings.Contains(env, "OPENAI_API_KEY") || strings.Contains(env, "sk-must-not-leak") {
		t.Errorf("the server sees our OPENAI_API_KEY:\n%s", env)
	}

	// kill -9 of the wrapper: the whole group goes, and the server comes back.
	pgid := sessionPID(m, "everything")
	if n := len(groupAlive(t, pgid)); n < 2 {
		t.Fatalf("group %d has %d processes, want npx and node", pgid, n)
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the old group (npm, sh, node) to die", func() bool { return len(groupAlive(t, pgid)) == 0 })
	testwait.For(t, "echo to work again", func() bool {
		got, err := call(t, m, "everything__echo", `{"message":"again"}`)
		return err == nil && strings.Contains(got, "again")
	})

	pgid = sessionPID(m, "everything")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if alive := groupAlive(t, pgid); len(alive) > 0 {
		t.Errorf("after Close, group %d still has %v", pgid, alive)
	}
}

// everythingIdle is the idle call timeout of the server-everything tests.
// longRunning's operation lasts twice as long (5 s) and reports progress
// every 0.2 s, so it completes only if progress extends the call, and a
// loaded machine may stall 2.5 s between two notifications before it
// fails (1 s was exceeded at a load average of 20 on 2 cores).
const everythingIdle = 2500 * time.Millisecond

// longRunning calls a tool that runs 5 s with a CallTimeout of 2.5 s: only
// progress keeps it alive.
func longRunning(t *testing.T, m *Manager, server string) {
	t.Helper()
	got := mustCall(t, m, server+"__trigger-long-running-operation", `{"duration":5,"steps":25}`)
	if !strings.Contains(got, "completed") {
		t.Errorf("long running operation = %q", got)
	}
}

// freePort is a port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs server-everything in mode (streamableHttp or
// sse) on a free port, killed with the test, and returns its base URL.
func startEverythingHTTP(t *testing.T, entry, mode string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command("node", entry, mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testwait.For(t, "server-everything "+mode+" to listen on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return "http://" + addr
}

func TestEverythingHTTP(t *testing.T) {
	t.Parallel()
	_, entry := everything(t)
	tests := []struct{ name, mode, path, typ, transport string }{
		{"streamable http", "streamableHttp", "/mcp", "http", TransportHTTP},
		{"streamable http, no type", "streamableHttp", "/mcp", "", TransportHTTP},
		{"sse fallback, no type", "sse", "/sse", "", TransportSSE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := startEverythingHTTP(t, entry, tt.mode)
			m := start(t, remoteConfig(t, tt.typ, base+tt.path, "unused"), Options{CallTimeout: everythingIdle})
			ts := waitState(t, m, "r", agent.ToolServerReady)
			if ts.Transport != tt.transport {
				t.Errorf("transport = %s, want %s", ts.Transport, tt.transport)
			}
			t.Logf("protocol %s", protocolOf(m, "r"))
			if got := mustCall(t, m, "r__echo", `{"message":"over `+tt.mode+`"}`); !strings.Contains(got, "over "+tt.mode) {
				t.Errorf("echo = %q", got)
			}
			longRunning(t, m, "r")
		})
	}
}
