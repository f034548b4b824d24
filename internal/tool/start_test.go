package tool

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestSlowFirstStartIsWaitedFor: while a server is in its first start it is
// listed by Starting, and Specs waits for it, so a turn begun at once still
// gets its tools.
func TestSlowFirstStartIsWaitedFor(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	m := start(t, stdioConfig("slow", map[string]string{"MCPSERVER_START_GATE": gate}), Options{StartTimeout: time.Minute})
	if got := m.Starting(); !slices.Equal(got, []string{"slow"}) {
		t.Fatalf("Starting() = %v, want [slow]", got)
	}
	got := make(chan []agent.ToolSpec, 1)
	go func() { got <- m.Specs(t.Context()) }()
	if s := serverState(m, "slow"); s.State != agent.ToolServerStarting {
		t.Fatalf("server = %+v, want starting while the gate is closed", s)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var names []string
	select {
	case specs := <-got:
		for _, s := range specs {
			names = append(names, s.Name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Specs did not return after the server started")
	}
	if !slices.Contains(names, "slow__echo") {
		t.Errorf("Specs = %v, want slow__echo: the first start was not waited for", names)
	}
	if s := m.Starting(); len(s) != 0 {
		t.Errorf("Starting() = %v after the start, want none", s)
	}
}

// TestFailedFirstStartIsRetried: a server that fails its first start ends
// its first start (Specs no longer waits) and is retried with backoff until
// it comes up.
func TestFailedFirstStartIsRetried(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "tried")
	script := `if [ -e "$1" ]; then exec "$2"; else echo not yet >&2; touch "$1"; exit 3; fi`
	cfg := Config{Servers: []ServerConfig{{Name: "flaky", Transport: TransportStdio, Command: "sh", Args: []string{"-c", script, "sh", marker, testServerBin}}}}
	ev := newEvents()
	m := start(t, cfg, Options{OnChange: ev.on, RestartBackoff: 10 * time.Millisecond})
	waitState(t, m, "flaky", agent.ToolServerReady)
	if got := ev.states("flaky"); !slices.Contains(got, agent.ToolServerFailed) {
		t.Errorf("states %v, want a failure before ready", got)
	}
	if s := m.Starting(); len(s) != 0 {
		t.Errorf("Starting() = %v, want none", s)
	}
}
