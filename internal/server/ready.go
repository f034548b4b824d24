package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// handleReady is the readiness probe: 200 once the database answers and
// every enabled tool server has finished its first start, 503 (saying what
// is pending) before. /health stays the liveness probe.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	body := protocol.Readiness{Status: "ready", Database: "ok", ToolsStarting: []string{}}
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Warn("ready_db_failed", "err", err)
		body.Database = "unreachable"
	}
	if s.tools != nil {
		for _, ts := range s.tools.Servers() {
			if ts.State == agent.ToolServerStarting {
				body.ToolsStarting = append(body.ToolsStarting, ts.Name)
			}
		}
	}
	code := http.StatusOK
	if body.Database != "ok" || len(body.ToolsStarting) > 0 {
		body.Status, code = "not_ready", http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, code, body)
}
