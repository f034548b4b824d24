package protocol

// WebSocket ops of the prompt library and the caller's preferences
// (docs/PROTOCOL.md, Saved prompts and preferences); each mirrors its REST
// route: list_saved_prompts is GET /agentik/saved-prompts,
// create_saved_prompt POST /agentik/saved-prompts, update_saved_prompt
// PATCH /agentik/saved-prompts/{prompt_id}, delete_saved_prompt DELETE
// /agentik/saved-prompts/{prompt_id}, get_preferences GET
// /agentik/me/preferences, update_preferences PATCH
// /agentik/me/preferences.
const (
	OpListSavedPrompts  = "list_saved_prompts"
	OpCreateSavedPrompt = "create_saved_prompt"
	OpUpdateSavedPrompt = "update_saved_prompt"
	OpDeleteSavedPrompt = "delete_saved_prompt"
	OpGetPreferences    = "get_preferences"
	OpUpdatePreferences = "update_preferences"
)
