package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// Readiness is the body of GET /ready.
type Readiness struct {
	Status   string `json:"status"`   // "ready" or "not_ready"
	Database string `json:"database"` // "ok" or "unreachable"
	// ToolsStarting names the enabled tool servers still in their first
	// start; a server that failed it counts as started (it is retried in
	// the background and shows as failed in /agentik/tools).
	ToolsStarting []string `json:"tools_starting"`
}

// handleReady is the readiness probe: 200 once the database answers and
// every enabled tool server has finished its first start, 503 (saying what
// is pending) before. /health stays the liveness probe.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	body := Readiness{Status: "ready", Database: "ok", ToolsStarting: []string{}}
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
