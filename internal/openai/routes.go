package openai

import "net/http"

// Routes is the facade's URL surface: pattern → handler. The server
// registers each pattern on its own mux (so metrics label requests by
// these patterns), behind its middleware.
func (h *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /v1/models":            http.HandlerFunc(h.handleModels),
		"POST /v1/chat/completions": http.HandlerFunc(h.handleChatCompletions),
		"/v1":                       http.HandlerFunc(h.handleNoRoute),
		"/v1/":                      http.HandlerFunc(h.handleNoRoute),
	}
}
