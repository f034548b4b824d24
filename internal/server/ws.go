package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// handleWS is replaced by the WebSocket endpoint.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, agent.Errorf(agent.CodeUnavailable, "the WebSocket endpoint is not built yet"))
}
