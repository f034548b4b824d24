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
	mux.HandleFunc("GET "+wsPath, s.handleWS)

	// Ops of the op table (op.go): each route here is also the WebSocket
	// op of the op's name, with the same fields ({conversation_id} is the
	// field conversation_id).
	// Conversations (conversation.go, queue.go, approval.go, elicit.go,
	// branch.go, compact.go).
	mux.HandleFunc("POST /agentik/conversations", s.op(opCreateConversation))
	mux.HandleFunc("GET /agentik/conversations", s.op(opListConversations))
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}", s.op(opGetConversation))
	mux.HandleFunc("PATCH /agentik/conversations/{conversation_id}", s.op(opUpdateConversation))
	mux.HandleFunc("DELETE /agentik/conversations/{conversation_id}", s.op(opDelete))
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}/messages", s.op(opGetMessages))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/rename", s.op(opRename))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/send", s.op(opSend)) // the turn's SSE stream
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/interrupt", s.op(opInterrupt))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/compact", s.op(opCompact))
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}/queue", s.op(opListQueue))
	mux.HandleFunc("DELETE /agentik/conversations/{conversation_id}/queue/{message_id}", s.op(opCancelQueued))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/approve", s.op(opApprove))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/app-calls", s.op(opAppCall))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/elicit", s.op(opElicit))
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/regenerate", s.op(opRegenerate)) // SSE, as send
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/edit", s.op(opEdit))             // SSE, as send
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/switch_branch", s.op(opSwitchBranch))
	mux.HandleFunc("GET /agentik/search", s.op(opSearch)) // search.go
	mux.HandleFunc("GET /agentik/models", s.op(opListModels))
	// Tool servers, their resources and prompts (event.go, resource.go).
	mux.HandleFunc("GET /agentik/tools", s.op(opListTools))
	mux.HandleFunc("GET /agentik/resources", s.op(opListResources))
	mux.HandleFunc("GET /agentik/resources/read", s.op(opReadResource))
	mux.HandleFunc("GET /agentik/prompts", s.op(opListPrompts))
	mux.HandleFunc("POST /agentik/prompts/get", s.op(opGetPrompt))
	// Agents (agentdef.go).
	mux.HandleFunc("POST /agentik/agents", s.op(opCreateAgent))
	mux.HandleFunc("GET /agentik/agents", s.op(opListAgents))
	mux.HandleFunc("GET /agentik/agents/{slug}", s.op(opGetAgent))
	mux.HandleFunc("PATCH /agentik/agents/{slug}", s.op(opUpdateAgent))
	mux.HandleFunc("DELETE /agentik/agents/{slug}", s.op(opDeleteAgent))
	// Streams and files, outside the op table: SSE, replays, archives.
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}/events", s.handleConversationEvents)
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}/events/replay", s.handleConversationReplay)
	mux.HandleFunc("GET /agentik/events", s.handleAgentEvents)
	mux.HandleFunc("GET /agentik/events/all", s.handleAllEvents)
	mux.HandleFunc("GET /agentik/events/replay", s.handleReplay)
	mux.HandleFunc("GET /agentik/oauth/callback", s.handleOAuthCallback) // a remote MCP server's sign-in
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}/export", s.handleExport)
	mux.HandleFunc("GET /agentik/export", s.handleExportAll)
	mux.HandleFunc("POST /agentik/import", s.handleImport) // importPath
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
	// Password accounts (password.go); sign-up and reset are public.
	mux.HandleFunc("POST /agentik/invites", s.op(opCreateInvite))
	mux.HandleFunc("PUT /agentik/me/password", s.op(opSetPassword))
	mux.HandleFunc("POST /agentik/users/{user_id}/reset", s.op(opCreateResetLink))
	mux.HandleFunc("POST /agentik/signup", s.handleAPISignup)
	mux.HandleFunc("POST /agentik/reset", s.handleAPIReset)
	// Groups (group.go): an admin's; a member lists their own.
	mux.HandleFunc("GET /agentik/groups", s.op(opListGroups))
	mux.HandleFunc("POST /agentik/groups", s.op(opCreateGroup))
	mux.HandleFunc("GET /agentik/groups/{group_id}", s.op(opGetGroup))
	mux.HandleFunc("PATCH /agentik/groups/{group_id}", s.op(opUpdateGroup))
	mux.HandleFunc("DELETE /agentik/groups/{group_id}", s.op(opDeleteGroup))
	mux.HandleFunc("PUT /agentik/groups/{group_id}/members/{user_id}", s.op(opAddGroupMember))
	mux.HandleFunc("DELETE /agentik/groups/{group_id}/members/{user_id}", s.op(opRemoveGroupMember))
	// The audit log (audit.go).
	mux.HandleFunc("GET /agentik/audit", s.op(opListAudit))
	mux.HandleFunc("GET /agentik/audit/export", s.handleAuditExport)
	// Schedules (schedule.go).
	mux.HandleFunc("POST /agentik/schedules", s.op(opCreateSchedule))
	mux.HandleFunc("GET /agentik/schedules", s.op(opListSchedules))
	mux.HandleFunc("GET /agentik/schedules/{schedule_id}", s.op(opGetSchedule))
	mux.HandleFunc("PATCH /agentik/schedules/{schedule_id}", s.op(opUpdateSchedule))
	mux.HandleFunc("DELETE /agentik/schedules/{schedule_id}", s.op(opDeleteSchedule))
	mux.HandleFunc("GET /agentik/schedules/{schedule_id}/runs", s.op(opListScheduleRuns))
	// Memory (memory.go).
	mux.HandleFunc("GET /agentik/memory", s.op(opGetMemory))
	mux.HandleFunc("GET /agentik/memory/changes", s.op(opListMemoryChanges))
	mux.HandleFunc("POST /agentik/memory/changes/{change_id}/revert", s.op(opRevertMemory))
	mux.HandleFunc("PUT /agentik/memory/{label}", s.op(opPutMemory))
	mux.HandleFunc("DELETE /agentik/memory/{label}", s.op(opClearMemory))
	// Files and knowledge (file.go).
	mux.HandleFunc("POST /agentik/files", s.op(opUploadFile)) // filesPath: multipart or JSON
	mux.HandleFunc("GET /agentik/files", s.op(opListFiles))
	mux.HandleFunc("GET /agentik/files/{file_id}", s.op(opGetFile))
	mux.HandleFunc("GET /agentik/files/{file_id}/content", s.handleFileContent)
	mux.HandleFunc("GET /agentik/apps/view", s.handleAppView)
	mux.HandleFunc("DELETE /agentik/files/{file_id}", s.op(opDeleteFile))
	mux.HandleFunc("POST /agentik/files/{file_id}/retry", s.op(opRetryFile))
	mux.HandleFunc("POST /agentik/knowledge", s.op(opCreateKnowledge))
	mux.HandleFunc("GET /agentik/knowledge", s.op(opListKnowledge))
	mux.HandleFunc("GET /agentik/knowledge/{knowledge_id}", s.op(opGetKnowledge))
	mux.HandleFunc("PATCH /agentik/knowledge/{knowledge_id}", s.op(opUpdateKnowledge))
	mux.HandleFunc("DELETE /agentik/knowledge/{knowledge_id}", s.op(opDeleteKnowledge))
	mux.HandleFunc("POST /agentik/knowledge/{knowledge_id}/files", s.op(opAddKnowledgeFile))
	mux.HandleFunc("DELETE /agentik/knowledge/{knowledge_id}/files/{file_id}", s.op(opRemoveKnowledgeFile))
	mux.HandleFunc("POST /agentik/knowledge/{knowledge_id}/search", s.op(opSearchKnowledge))
	// Projects (project.go).
	mux.HandleFunc("POST /agentik/projects", s.op(opCreateProject))
	mux.HandleFunc("GET /agentik/projects", s.op(opListProjects))
	mux.HandleFunc("GET /agentik/projects/{project_id}", s.op(opGetProject))
	mux.HandleFunc("PATCH /agentik/projects/{project_id}", s.op(opUpdateProject))
	mux.HandleFunc("DELETE /agentik/projects/{project_id}", s.op(opDeleteProject))
	// Feedback (feedback.go).
	mux.HandleFunc("PUT /agentik/conversations/{conversation_id}/messages/{message_id}/feedback", s.op(opRateMessage))
	mux.HandleFunc("GET /agentik/conversations/{conversation_id}/feedback", s.op(opListFeedback))
	mux.HandleFunc("GET /agentik/feedback", s.op(opFeedbackReport))
	// The prompt library and the caller's preferences (savedprompt.go).
	mux.HandleFunc("GET /agentik/saved-prompts", s.op(opListSavedPrompts))
	mux.HandleFunc("POST /agentik/saved-prompts", s.op(opCreateSavedPrompt))
	mux.HandleFunc("PATCH /agentik/saved-prompts/{prompt_id}", s.op(opUpdateSavedPrompt))
	mux.HandleFunc("DELETE /agentik/saved-prompts/{prompt_id}", s.op(opDeleteSavedPrompt))
	mux.HandleFunc("GET /agentik/me/preferences", s.op(opGetPreferences))
	mux.HandleFunc("PATCH /agentik/me/preferences", s.op(opUpdatePreferences))
	// Share links (share.go); their pages are below.
	mux.HandleFunc("POST /agentik/conversations/{conversation_id}/shares", s.op(opCreateShare))
	mux.HandleFunc("GET /agentik/shares", s.op(opListShares))
	mux.HandleFunc("DELETE /agentik/shares/{share_id}", s.op(opRevokeShare))
	// Inbox (inbox.go).
	mux.HandleFunc("GET /agentik/inbox", s.op(opListInbox))
	mux.HandleFunc("POST /agentik/inbox/{item_id}", s.op(opAnswerInbox))
	mux.HandleFunc("GET /agentik/credentials", s.op(opListCredentials))
	mux.HandleFunc("PUT /agentik/credentials/{server}", s.op(opSetCredential))
	mux.HandleFunc("DELETE /agentik/credentials/{server}", s.op(opDeleteCredential))
	// The admin panel (admin.go): an admin's only.
	mux.HandleFunc("GET /agentik/admin/settings", s.op(opAdminSettings))
	mux.HandleFunc("POST /agentik/admin/providers", s.op(opAdminPutProvider))
	mux.HandleFunc("POST /agentik/admin/providers/test", s.op(opAdminTestProvider))
	mux.HandleFunc("DELETE /agentik/admin/providers/{name}", s.op(opAdminDeleteProvider))
	mux.HandleFunc("PUT /agentik/admin/default_model", s.op(opAdminDefaultModel))
	mux.HandleFunc("POST /agentik/admin/mcp_servers", s.op(opAdminPutMCPServer))
	mux.HandleFunc("DELETE /agentik/admin/mcp_servers/{name}", s.op(opAdminDeleteMCPServer))
	mux.HandleFunc("POST /agentik/admin/mcp_servers/{name}/restart", s.op(opAdminRestartMCP))
	mux.HandleFunc("PUT /agentik/admin/system_prompt", s.op(opAdminSystemPrompt))
	mux.HandleFunc("PUT /agentik/admin/default_budget", s.op(opAdminDefaultBudget))
	mux.HandleFunc("GET /agentik/admin/users/{user_id}/conversations", s.op(opAdminConversations))
	mux.HandleFunc("/agentik/", s.handleNoRoute)

	// Protocol packages: each its own handler over the centre, its routes
	// in its own routes.go, behind this server's middleware.
	mount(mux, s.openai.Routes()) // OpenAI-compatible /v1 (internal/openai)

	mount(mux, s.a2a.Routes())       // A2A: agent cards, /a2a/{slug} JSON-RPC (internal/a2a)
	mount(mux, s.newMCP().Routes())  // MCP server /mcp: agents as tools (internal/mcpserve)
	mount(mux, s.newSCIM().Routes()) // SCIM 2.0 /scim/v2: an identity provider's users and groups (internal/scim)

	// RFC 9728 metadata of /mcp, for OAuth-first MCP clients (protected.go).
	mux.HandleFunc("GET "+resourceMetadataRoot, s.handleResourceMetadata)
	mux.HandleFunc("GET "+resourceMetadataPath, s.handleResourceMetadata)

	// Front-end streams: the AI SDK's useChat (internal/aisdk) and AG-UI (internal/agui).
	mount(mux, s.aisdk.Routes())
	mount(mux, s.agui.Routes())

	// pages: the browser UI (begin)
	mux.HandleFunc("GET /{$}", s.handleIndex)
	mux.HandleFunc("GET /c/{id}", s.handleChat)
	mux.Handle("GET /assets/", assets.Handler())
	mux.HandleFunc("GET "+artifactPath, s.handleArtifactFrame) // artifact.go: the sandboxed frame of an artifact
	// pages: the browser UI (end)
	mux.HandleFunc("GET /login", s.handleLoginPage)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	mux.HandleFunc("GET /signup", s.handleSignupPage)
	mux.HandleFunc("POST /signup", s.handleSignup)
	mux.HandleFunc("GET /reset", s.handleResetPage)
	mux.HandleFunc("POST /reset", s.handleReset)
	mux.HandleFunc("GET /settings", s.handlePeople)    // users.go: preferences, saved prompts, account
	mux.HandleFunc("GET /people", s.handlePeopleMoved) // the settings page's old address
	mux.HandleFunc("GET /agents", s.handleAgentsPage)  // agentdef.go
	mux.HandleFunc("GET /schedules", s.handleSchedulesPage)
	mux.HandleFunc("GET /memory", s.handleMemoryPage)                 // memory.go
	mux.HandleFunc("GET /inbox", s.handleInboxPage)                   // inbox.go
	mux.HandleFunc("GET /admin", s.handleAdminPage)                   // admin.go
	mux.HandleFunc("GET /knowledge", s.handleKnowledgePage)           // file.go
	mux.HandleFunc("GET /projects", s.handleProjectsPage)             // project.go
	mux.HandleFunc("GET /projects/{id}", s.handleProjectsPage)        // project.go
	mux.HandleFunc("GET /s/{token}", s.handleSharePage)               // share.go: a share link
	mux.HandleFunc("POST /s/{token}/copy", s.handleShareCopy)         // share.go: continue it as one's copy
	mux.HandleFunc("GET /s/{token}/apps/{call_id}", s.handleShareApp) // share.go: an MCP App of a card it shows
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
