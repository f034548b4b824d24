package server

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/agentik/agentik/internal/agent"
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

// catalogIDs are the model ids of the providers but the default (which
// the facade lists by its name, as before providers) and those in have:
// /v1/models lists them after the default model's name.
func (s *Server) catalogIDs(have []string) []string {
	ms, def := s.runner.Models()
	var out []string
	for _, m := range ms {
		if m.ID != def && !slices.Contains(have, m.ID) {
			out = append(out, m.ID)
		}
	}
	return out
}

// useModel runs the temp conversation of a /v1 request on the model it
// named, when that is a provider's model id.
func (s *Server) useModel(ctx context.Context, id, model string) error {
	ms, def := s.runner.Models()
	agentModel := strings.HasPrefix(model, agent.AgentModelPrefix) // the runner resolves agent/<slug>
	if !agentModel && (model == def || !slices.ContainsFunc(ms, func(m agent.ModelInfo) bool { return m.ID == model })) {
		return nil
	}
	_, err := s.runner.UpdateConversation(ctx, id, agent.Settings{Model: &model})
	return err
}
