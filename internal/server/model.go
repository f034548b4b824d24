package server

import (
	"net/http"

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
