package server

import (
	"net/http"

	"github.com/agentik/agentik/assets"
)

// routes is the whole URL surface.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /ready", s.handleReady)
	mux.HandleFunc("GET /metrics", s.handleMetrics)

	// WebSocket: every subscription and command on one connection.
	mux.HandleFunc("GET /agentik/ws", s.handleWS)

	// REST + SSE, compatible with the original agentik facade.
	mux.HandleFunc("POST /agentik/conversations", s.handleCreate)
	mux.HandleFunc("GET /agentik/conversations", s.handleList)
	mux.HandleFunc("GET /agentik/conversations/{id}", s.handleGet)
	mux.HandleFunc("GET /agentik/conversations/{id}/messages", s.handleMessages)
	mux.HandleFunc("POST /agentik/conversations/{id}/rename", s.handleRename)
	mux.HandleFunc("DELETE /agentik/conversations/{id}", s.handleDelete)
	mux.HandleFunc("POST /agentik/conversations/{id}/send", s.handleSend)
	mux.HandleFunc("GET /agentik/conversations/{id}/events", s.handleConversationEvents)
	mux.HandleFunc("POST /agentik/conversations/{id}/interrupt", s.handleInterrupt)
	mux.HandleFunc("POST /agentik/conversations/{id}/compact", s.handleCompact)
	mux.HandleFunc("GET /agentik/conversations/{id}/queue", s.handleQueue)
	mux.HandleFunc("POST /agentik/conversations/{id}/approve", s.handleApprove)
	mux.HandleFunc("POST /agentik/conversations/{id}/elicit", s.handleElicit)
	mux.HandleFunc("DELETE /agentik/conversations/{id}/queue/{message_id}", s.handleCancelQueued)
	mux.HandleFunc("POST /agentik/conversations/{id}/regenerate", s.handleRegenerate)
	mux.HandleFunc("POST /agentik/conversations/{id}/edit", s.handleEdit)
	mux.HandleFunc("POST /agentik/conversations/{id}/switch_branch", s.handleSwitchBranch)
	mux.HandleFunc("GET /agentik/conversations/{id}/events/replay", s.handleConversationReplay)
	mux.HandleFunc("GET /agentik/events", s.handleAgentEvents)
	mux.HandleFunc("GET /agentik/events/all", s.handleAllEvents)
	mux.HandleFunc("GET /agentik/events/replay", s.handleReplay)
	mux.HandleFunc("GET /agentik/tools", s.handleTools)
	mux.HandleFunc("GET /agentik/oauth/callback", s.handleOAuthCallback) // a remote MCP server's sign-in
	mux.HandleFunc("GET /agentik/resources", s.handleResources)          // resource.go
	mux.HandleFunc("GET /agentik/resources/read", s.handleReadResource)
	mux.HandleFunc("GET /agentik/prompts", s.handlePrompts)
	mux.HandleFunc("POST /agentik/prompts/get", s.handleGetPrompt)
	mux.HandleFunc("GET /agentik/search", s.handleSearch)
	mux.HandleFunc("GET /agentik/conversations/{id}/export", s.handleExport)
	mux.HandleFunc("GET /agentik/export", s.handleExportAll)
	mux.HandleFunc("POST /agentik/import", s.handleImport) // importPath
	mux.HandleFunc("GET /agentik/models", s.handleAgentikModels)
	mux.HandleFunc("PATCH /agentik/conversations/{id}", s.handleUpdate)
	mux.HandleFunc("POST /agentik/agents", s.handleCreateAgent)
	mux.HandleFunc("GET /agentik/agents", s.handleListAgents)
	mux.HandleFunc("GET /agentik/agents/{slug}", s.handleGetAgent)
	mux.HandleFunc("PATCH /agentik/agents/{slug}", s.handleUpdateAgent)
	mux.HandleFunc("DELETE /agentik/agents/{slug}", s.handleDeleteAgent)
	// Ops of the op table (op.go): each route here is also the WebSocket
	// op of the op's name, with the same fields.
	// Accounts (users.go).
	mux.HandleFunc("GET /agentik/me", s.op(opMe))
	mux.HandleFunc("GET /agentik/usage", s.op(opGetUsage))
	mux.HandleFunc("GET /agentik/me/keys", s.op(opListKeys))
	mux.HandleFunc("POST /agentik/me/keys", s.op(opCreateKey))
	mux.HandleFunc("DELETE /agentik/me/keys/{key_id}", s.op(opRevokeKey))
	mux.HandleFunc("GET /agentik/users", s.op(opListUsers))
	mux.HandleFunc("POST /agentik/users", s.op(opCreateUser))
	mux.HandleFunc("GET /agentik/users/{user_id}", s.op(opGetUser))
	mux.HandleFunc("PATCH /agentik/users/{user_id}", s.op(opUpdateUser))
	mux.HandleFunc("DELETE /agentik/users/{user_id}", s.op(opDeleteUser))
	mux.HandleFunc("GET /agentik/users/{user_id}/keys", s.op(opListKeys))
	mux.HandleFunc("POST /agentik/users/{user_id}/keys", s.op(opCreateKey))
	mux.HandleFunc("DELETE /agentik/users/{user_id}/keys/{key_id}", s.op(opRevokeKey))
	// Schedules (schedule.go).
	mux.HandleFunc("POST /agentik/schedules", s.op(opCreateSchedule))
	mux.HandleFunc("GET /agentik/schedules", s.op(opListSchedules))
	mux.HandleFunc("GET /agentik/schedules/{schedule_id}", s.op(opGetSchedule))
	mux.HandleFunc("PATCH /agentik/schedules/{schedule_id}", s.op(opUpdateSchedule))
	mux.HandleFunc("DELETE /agentik/schedules/{schedule_id}", s.op(opDeleteSchedule))
	mux.HandleFunc("GET /agentik/schedules/{schedule_id}/runs", s.op(opListScheduleRuns))
	mux.HandleFunc("/agentik/", s.handleNoRoute)

	// Protocol packages: each its own handler over the centre, its routes
	// in its own routes.go, behind this server's middleware.
	mount(mux, s.openai.Routes()) // OpenAI-compatible /v1 (internal/openai)

	mount(mux, s.newA2A().Routes()) // A2A: agent cards, /a2a/{slug} JSON-RPC (internal/a2a)
	mount(mux, s.newMCP().Routes()) // MCP server /mcp: agents as tools (internal/mcpserve)

	// Front-end streams: the AI SDK's useChat (internal/aisdk) and AG-UI (internal/agui).
	mount(mux, s.aisdk.Routes())
	mount(mux, s.agui.Routes())

	// pages: the browser UI (begin)
	mux.HandleFunc("GET /{$}", s.handleIndex)
	mux.HandleFunc("GET /c/{id}", s.handleChat)
	mux.Handle("GET /assets/", assets.Handler())
	// pages: the browser UI (end)
	mux.HandleFunc("GET /login", s.handleLoginPage)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	mux.HandleFunc("GET /people", s.handlePeople)
	mux.HandleFunc("GET /schedules", s.handleSchedulesPage)
	mux.HandleFunc("GET /auth/oidc/login", s.handleOIDCLogin)
	mux.HandleFunc("GET /auth/oidc/callback", s.handleOIDCCallback)

	return s.observe(mux, s.guard(mux))
}

// mount registers a protocol package's routes (pattern → handler) on mux.
func mount(mux *http.ServeMux, routes map[string]http.Handler) {
	for pattern, h := range routes {
		mux.Handle(pattern, h)
	}
}
