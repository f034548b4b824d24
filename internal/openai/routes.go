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

		"POST /v1/responses":                 h.route(h.handleCreateResponse),
		"GET /v1/responses/{id}":             h.route(h.handleGetResponse),
		"DELETE /v1/responses/{id}":          h.route(h.handleDeleteResponse),
		"POST /v1/responses/{id}/cancel":     h.route(h.handleCancelResponse),
		"GET /v1/responses/{id}/input_items": h.route(h.handleInputItems),

		"POST /v1/conversations":            h.route(h.handleCreateConversation),
		"GET /v1/conversations/{id}":        h.route(h.handleGetConversation),
		"DELETE /v1/conversations/{id}":     h.route(h.handleDeleteConversation),
		"GET /v1/conversations/{id}/items":  h.route(h.handleListItems),
		"POST /v1/conversations/{id}/items": h.route(h.handleAddItems),

		// Files and vector stores (files.go).
		"POST /v1/files":                                           h.route(h.withFiles(h.handleCreateFile)),
		"GET /v1/files":                                            h.route(h.withFiles(h.handleListFiles)),
		"GET /v1/files/{id}":                                       h.route(h.withFiles(h.handleGetFile)),
		"DELETE /v1/files/{id}":                                    h.route(h.withFiles(h.handleDeleteFile)),
		"GET /v1/files/{id}/content":                               h.route(h.withFiles(h.handleFileContent)),
		"POST /v1/vector_stores":                                   h.route(h.withFiles(h.handleCreateStore)),
		"GET /v1/vector_stores":                                    h.route(h.withFiles(h.handleListStores)),
		"GET /v1/vector_stores/{id}":                               h.route(h.withFiles(h.handleGetStore)),
		"POST /v1/vector_stores/{id}":                              h.route(h.withFiles(h.handleUpdateStore)),
		"DELETE /v1/vector_stores/{id}":                            h.route(h.withFiles(h.handleDeleteStore)),
		"POST /v1/vector_stores/{id}/files":                        h.route(h.withFiles(h.handleAddStoreFile)),
		"GET /v1/vector_stores/{id}/files":                         h.route(h.withFiles(h.handleListStoreFiles)),
		"GET /v1/vector_stores/{id}/files/{file_id}":               h.route(h.withFiles(h.handleGetStoreFile)),
		"DELETE /v1/vector_stores/{id}/files/{file_id}":            h.route(h.withFiles(h.handleDeleteStoreFile)),
		"POST /v1/vector_stores/{id}/file_batches":                 h.route(h.withFiles(h.handleCreateBatch)),
		"GET /v1/vector_stores/{id}/file_batches/{batch_id}":       h.route(h.withFiles(h.handleGetBatch)),
		"GET /v1/vector_stores/{id}/file_batches/{batch_id}/files": h.route(h.withFiles(h.handleListBatchFiles)),
		"POST /v1/vector_stores/{id}/search":                       h.route(h.withFiles(h.handleSearchStore)),

		"/v1":  h.route(h.handleNoRoute),
		"/v1/": h.route(h.handleNoRoute),
	}
}
