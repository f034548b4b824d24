package agent

import (
	"context"
	"encoding/json"
)

// Roles of a ModelMessage.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	// RoleSummary is the summary of earlier turns that a compaction put in
	// place of them; the model adapter shows it to the model with the
	// system prompt.
	RoleSummary = "summary"
)

// ModelMessage is one entry of what the model sees: the working memory of a
// conversation, rebuilt into the model's context on every call.
type ModelMessage struct {
	Role       string     `json:"role"`
	Content    []Content  `json:"content,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"` // assistant
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"` // tool
	// MessageID, on a user entry, is the history message it came from:
	// a compaction names the turns it summarized and the one it kept
	// first (compaction.go). Entries written before it was kept have none.
	MessageID string `json:"message_id,omitempty"`
}

// ToolCall is a call the model asked for. Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec describes a tool to the model. Parameters is a JSON Schema.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ChatRequest is one model call.
type ChatRequest struct {
	Messages []ModelMessage
	Tools    []ToolSpec
	// Model overrides the adapter's model for this call ("" = its own,
	// the default): the conversation's model id (<provider>/<model>), or
	// AGENTIK_SUMMARY_MODEL for the summaries of compaction.
	Model  string
	Params *Params // the conversation's sampling; nil: the model's defaults
	// MaxTokens bounds the answer (0 = the endpoint's default).
	MaxTokens int
	// ResponseFormat constrains the answer's text (nil: free text), as a
	// protocol request asked (chat completions' response_format,
	// Responses' text.format).
	ResponseFormat *ResponseFormat
	// ToolChoice says whether and which tool the model must call (nil:
	// auto, the model chooses).
	ToolChoice *ToolChoice
	// Continue: the last message is the model's own answer, cut off when
	// its process died (recovery.go); the model goes on from its last
	// character, without repeating it. The adapter asks for that as its
	// provider can: an assistant prefix the model continues, else an
	// instruction to continue.
	Continue bool
}

// Response formats.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object" // any JSON object
	FormatJSONSchema = "json_schema" // JSON that matches Schema
)

// ResponseFormat constrains the text of the model's answer.
type ResponseFormat struct {
	Type string `json:"type"` // FormatText, FormatJSONObject or FormatJSONSchema
	// Name, Description, Schema and Strict describe a json_schema format.
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// Tool choice modes.
const (
	ToolChoiceAuto     = "auto"     // the model chooses
	ToolChoiceNone     = "none"     // no tool call
	ToolChoiceRequired = "required" // at least one tool call
	ToolChoiceFunction = "function" // a call to the tool named Name
)

// ToolChoice says whether and which tool the model must call.
type ToolChoice struct {
	Mode string `json:"mode"`
	Name string `json:"name,omitempty"` // with ToolChoiceFunction
	// Allowed, when set, are the only tools the model may call (with
	// ToolChoiceAuto or ToolChoiceRequired): the others are not offered.
	Allowed []string `json:"allowed,omitempty"`
}

// AfterRound is the choice for the model call after a round of tool
// calls: a forced call (required, a named function) was made, so the
// model chooses again, as OpenAI's Agents SDK resets it, instead of
// calling tools forever. none and the allowed set stay.
func (c *ToolChoice) AfterRound() *ToolChoice {
	if c == nil || c.Mode == ToolChoiceNone || c.Mode == ToolChoiceAuto {
		return c
	}
	if len(c.Allowed) > 0 {
		return &ToolChoice{Mode: ToolChoiceAuto, Allowed: c.Allowed}
	}
	return nil
}

// Delta is a piece of a streamed answer: exactly one field is set.
type Delta struct {
	Reasoning string
	Text      string
	Image     *Content
	// ToolArguments is how many bytes of tool-call arguments arrived:
	// nothing to show, but they count toward the answer cap.
	ToolArguments int
}

// ChatResponse is what one model call produced once its stream ended.
type ChatResponse struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	Usage     Usage
}

// Model streams chat completions. Chat calls on for every delta in order;
// if on returns an error, Chat stops and returns it. Failures of the model
// are *Error with CodeModelError (or CodeUnavailable); a cancelled ctx
// returns ctx.Err(), and the response holds what arrived so far.
type Model interface {
	Chat(ctx context.Context, req ChatRequest, on func(Delta) error) (ChatResponse, error)
}

// Tools runs the tools the model may call.
type Tools interface {
	// Specs lists the tools available now. It may wait (bounded, and
	// never past ctx) for tool servers still in their first start.
	Specs(ctx context.Context) []ToolSpec
	// Call runs a tool. An error becomes a tool_result with is_error and
	// the turn goes on.
	Call(ctx context.Context, name, arguments string) (string, error)
}

// Tool server states.
const (
	ToolServerStarting   = "starting"
	ToolServerReady      = "ready"
	ToolServerRestarting = "restarting"
	ToolServerFailed     = "failed"
	ToolServerDisabled   = "disabled"
	// ToolServerAuthRequired: a remote server that needs the user to sign
	// in (OAuth); ToolServer.SignInURL is the link for them.
	ToolServerAuthRequired = "auth_required"
)

// ToolServer is the state of one tool (MCP) server, for clients to show.
type ToolServer struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"` // stdio, http, sse
	State     string   `json:"state"`
	Error     string   `json:"error,omitempty"` // the last error, secrets removed
	Tools     []string `json:"tools"`           // names as the model sees them
	// Apps are the tools that name an MCP App (their _meta.ui.resourceUri,
	// a ui:// resource of this server), by name as the model sees them.
	Apps map[string]string `json:"apps,omitempty"`
	// Visibility names the tools of Tools an MCP App restricts
	// (_meta.ui.visibility): who may call each, "model" and/or "app" (the
	// server's apps). A tool absent here is both's. A tool without "model"
	// is not offered to the model; one without "app" is refused to apps.
	Visibility map[string][]string `json:"visibility,omitempty"`
	// SignInURL is, in state auth_required, the consent link of the
	// server's authorization server for the user who asked.
	SignInURL string `json:"sign_in_url,omitempty"`
}

// Usage counts the tokens of a model call or of a whole turn.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.PromptTokens + o.PromptTokens, u.CompletionTokens + o.CompletionTokens, u.TotalTokens + o.TotalTokens}
}
