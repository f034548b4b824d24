package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/protocol"
)

func (s *Server) models() protocol.ModelsResult {
	ms, def := s.runner.Models()
	return protocol.ModelsResult{Models: ms, Default: def}
}

func (s *Server) handleAgentikModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.models())
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) {
	var req protocol.UpdateRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	st := req.Settings()
	st.Title = req.Title
	c, err := s.runner.UpdateConversation(r.Context(), r.PathValue("id"), st)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}
