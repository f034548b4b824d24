package protocol

// WebSocket ops of the admin panel (docs/PROTOCOL.md, Admin panel); each
// mirrors its REST route under /agentik/admin, an admin's only.
const (
	OpAdminSettings        = "admin_settings"
	OpAdminPutProvider     = "admin_put_provider"
	OpAdminDeleteProvider  = "admin_delete_provider"
	OpAdminTestProvider    = "admin_test_provider"
	OpAdminDefaultModel    = "admin_set_default_model"
	OpAdminPutMCPServer    = "admin_put_mcp_server"
	OpAdminDeleteMCPServer = "admin_delete_mcp_server"
	OpAdminRestartMCP      = "admin_restart_mcp_server"
	OpAdminSystemPrompt    = "admin_set_system_prompt"
	OpAdminDefaultBudget   = "admin_set_default_budget"
	OpAdminConversations   = "admin_list_conversations"
)
