package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/protocol"
)

// handleElicit answers a tool's request for input: 200 {} once the answer
// is stored (it reaches the tool in the background).
func (s *Server) handleElicit(w http.ResponseWriter, r *http.Request) {
	var req protocol.ElicitRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.runner.Elicit(r.Context(), r.PathValue("id"), req.Input()); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.Empty{})
}
