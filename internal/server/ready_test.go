package server_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
)

// stateTools is a ToolLister whose servers' states the test sets.
type stateTools struct {
	mu      sync.Mutex
	servers []agent.ToolServer
}

func (s *stateTools) Servers() []agent.ToolServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.servers)
}

func (s *stateTools) set(i int, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers[i].State = state
}

func TestReadyWaitsForToolFirstStart(t *testing.T) {
	t.Parallel()
	tools := &stateTools{servers: []agent.ToolServer{
		{Name: "slow", State: agent.ToolServerStarting},
		{Name: "off", State: agent.ToolServerDisabled},
	}}
	ts := newTestServer(t, func(_ *agent.Config, s *server.Config) { s.Tools, s.ToolsFor = tools, nil })

	var got protocol.Readiness
	ts.call(t, "GET", "/ready", "", 503, &got)
	if got.Status != "not_ready" || got.Database != "ok" || !slices.Equal(got.ToolsStarting, []string{"slow"}) {
		t.Errorf("while starting: %+v", got)
	}
	ts.call(t, "GET", "/health", "", 200, nil) // liveness is not readiness

	tools.set(0, agent.ToolServerFailed) // a failed first start is finished: it is retried in the background
	ts.call(t, "GET", "/ready", "", 200, &got)
	if got.Status != "ready" || len(got.ToolsStarting) != 0 {
		t.Errorf("after the first start: %+v", got)
	}
}

func TestReadyWithoutDatabase(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var got protocol.Readiness
	ts.call(t, "GET", "/ready", "", 200, &got)
	if got.Status != "ready" || got.ToolsStarting == nil {
		t.Errorf("no tools configured: %+v", got)
	}
	if err := ts.Store.Close(); err != nil {
		t.Fatal(err)
	}
	ts.call(t, "GET", "/ready", "", 503, &got)
	if got.Database != "unreachable" || got.Status != "not_ready" {
		t.Errorf("database closed: %+v", got)
	}
}
