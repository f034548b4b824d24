package openai

import "net/http"

// Routes is the facade's URL surface: pattern → handler. The server
// registers each pattern on its own mux (so metrics label requests by
// these patterns), behind its middleware.
func (h *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /v1/models":            http.HandlerFunc(h.handleModels),
		"POST /v1/chat/completions": http.HandlerFunc(h.handleChatCompletions),

		"POST /v1/responses":                 http.HandlerFunc(h.handleCreateResponse),
		"GET /v1/responses/{id}":             http.HandlerFunc(h.handleGetResponse),
		"DELETE /v1/responses/{id}":          http.HandlerFunc(h.handleDeleteResponse),
		"POST /v1/responses/{id}/cancel":     http.HandlerFunc(h.handleCancelResponse),
		"GET /v1/responses/{id}/input_items": http.HandlerFunc(h.handleInputItems),

		"POST /v1/conversations":            http.HandlerFunc(h.handleCreateConversation),
		"GET /v1/conversations/{id}":        http.HandlerFunc(h.handleGetConversation),
		"DELETE /v1/conversations/{id}":     http.HandlerFunc(h.handleDeleteConversation),
		"GET /v1/conversations/{id}/items":  http.HandlerFunc(h.handleListItems),
		"POST /v1/conversations/{id}/items": http.HandlerFunc(h.handleAddItems),

		"/v1":  http.HandlerFunc(h.handleNoRoute),
		"/v1/": http.HandlerFunc(h.handleNoRoute),
	}
}
