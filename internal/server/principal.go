package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// admin lets an admin through; anyone else gets a 403 (user management,
// /metrics: DESIGN.md §11.1). It reports whether r may go on.
func (s *Server) admin(w http.ResponseWriter, r *http.Request) bool {
	if agent.PrincipalFrom(r.Context()).Admin() {
		return true
	}
	s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "only an admin may do this"))
	return false
}
