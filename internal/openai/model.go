package openai

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// models is the list GET /v1/models answers and requests may name: the
// default model by its name, then the providers' other model ids. It is
// the one place the facade resolves model names.
func (h *Handler) models() []string {
	var out []string
	if h.cfg.ModelName != "" {
		out = append(out, h.cfg.ModelName)
	}
	ms, def := h.runner.Models()
	for _, m := range ms {
		if m.ID != def && !slices.Contains(out, m.ID) {
			out = append(out, m.ID)
		}
	}
	return out
}

// known reports whether a request may name model: one of models, or
// agent/<slug> of an agent the caller may use (AgentModels lists them but
// the default agent, which agent/agentik also names).
func (h *Handler) known(ctx context.Context, model string) bool {
	return slices.Contains(h.models(), model) || model == agent.AgentModelPrefix+agent.DefaultAgent ||
		slices.Contains(h.runner.AgentModels(ctx), model)
}

// unknownModel is the error of a model that known refuses.
func (h *Handler) unknownModel(model string) error {
	return &paramError{param: "model", code: "model_not_found",
		err: agent.Errorf(agent.CodeNotFound, "the model %q does not exist here; GET /v1/models lists agentik's models (%s) and agents (agent/<slug>)", agent.Shorten(model, 80), strings.Join(h.models(), ", "))}
}

// modelSetting is the setting that runs a request's temp conversation on
// the model it named, when that is a provider's model id or an agent.
func (h *Handler) modelSetting(model string) agent.Settings {
	ms, def := h.runner.Models()
	agentModel := strings.HasPrefix(model, agent.AgentModelPrefix) // the runner resolves agent/<slug>
	if !agentModel && (model == def || !slices.ContainsFunc(ms, func(m agent.ModelInfo) bool { return m.ID == model })) {
		return agent.Settings{}
	}
	return agent.Settings{Model: &model}
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (h *Handler) handleModels(w http.ResponseWriter, r *http.Request) {
	list := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: []modelObject{}}
	for _, m := range append(h.models(), h.runner.AgentModels(r.Context())...) {
		list.Data = append(list.Data, modelObject{ID: m, Object: "model", OwnedBy: "agentik"})
	}
	writeJSON(w, http.StatusOK, list)
}

// handleModel is GET /v1/models/{id} (ids may hold a slash:
// provider/model).
func (h *Handler) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !h.known(r.Context(), id) {
		h.WriteError(w, r, h.unknownModel(id))
		return
	}
	writeJSON(w, http.StatusOK, modelObject{ID: id, Object: "model", OwnedBy: "agentik"})
}
