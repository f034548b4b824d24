package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/agentik/agentik/internal/agent"
)

// SettingsFields are the settings a create_conversation or
// update_conversation may carry; absent fields stay as they are.
type SettingsFields struct {
	Model        *string       `json:"model,omitempty"`
	SystemPrompt *string       `json:"system_prompt,omitempty"`
	Params       *agent.Params `json:"params,omitempty"`
}

func (f SettingsFields) settings() agent.Settings {
	return agent.Settings{Model: f.Model, SystemPrompt: f.SystemPrompt, Params: f.Params}
}

// UpdateRequest is the body of PATCH /agentik/conversations/{id} and the
// fields of update_conversation.
type UpdateRequest struct {
	Title *string `json:"title,omitempty"`
	SettingsFields
}

// withTitle is the change an update_conversation command asks for.
func (c Command) withTitle() agent.Settings {
	s := c.settings()
	s.Title = c.Title
	return s
}

// ModelsResult is the result of list_models and GET /agentik/models.
type ModelsResult struct {
	Models  []agent.ModelInfo `json:"models"`
	Default string            `json:"default"`
}

func (s *Server) models() ModelsResult {
	ms, def := s.runner.Models()
	return ModelsResult{Models: ms, Default: def}
}

func (s *Server) handleAgentikModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.models())
}

func (s *Server) handleUpdate(w http.ResponseWriter, r *http.Request) {
	var req UpdateRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	st := req.settings()
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
	if model == def || !slices.ContainsFunc(ms, func(m agent.ModelInfo) bool { return m.ID == model }) {
		return nil
	}
	_, err := s.runner.UpdateConversation(ctx, id, agent.Settings{Model: &model})
	return err
}
