package openai

import "net/http"

// Routes is the facade's URL surface: pattern → handler. The server
// registers each pattern on its own mux (so metrics label requests by
// these patterns), behind its middleware. Every answer carries
// x-request-id.
func (h *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /v1/models":            h.route(h.handleModels),
		"GET /v1/models/{id...}":    h.route(h.handleModel),
		"POST /v1/chat/completions": h.route(h.handleChatCompletions),
		"/v1":                       h.route(h.handleNoRoute),
		"/v1/":                      h.route(h.handleNoRoute),
	}
}
