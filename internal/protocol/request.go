package protocol

import (
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// Bodies of the REST routes (the WebSocket op of the same name carries
// the same fields in its Command).

// SettingsFields are the settings a create_conversation or
// update_conversation may carry; absent fields stay as they are.
type SettingsFields struct {
	Model        *string       `json:"model,omitempty"`
	SystemPrompt *string       `json:"system_prompt,omitempty"`
	Params       *agent.Params `json:"params,omitempty"`
	Agent        *string       `json:"agent,omitempty"` // the conversation's agent, a slug
	Pinned       *bool         `json:"pinned,omitempty"`
	Archived     *bool         `json:"archived,omitempty"`
	// Project puts the conversation in a project ("" takes it out); only
	// the conversation's owner moves it.
	Project *string `json:"project,omitempty"`
}

// Settings is the change the fields ask for.
func (f SettingsFields) Settings() agent.Settings {
	return agent.Settings{Model: f.Model, SystemPrompt: f.SystemPrompt, Params: f.Params, Agent: f.Agent, Pinned: f.Pinned, Archived: f.Archived, Project: f.Project}
}

// CreateRequest is the body of create_conversation.
type CreateRequest struct {
	Title string `json:"title"`
	Temp  bool   `json:"temp"`
	SettingsFields
	// Knowledge attaches these knowledge bases (vs_…).
	Knowledge *[]string `json:"knowledge,omitempty"`
	// Tools are the tool servers and tools the conversation's turns are
	// offered (["*"]: every tool its agent allows, [] none). Not in
	// SettingsFields, whose Command shares the key with an agent's tools.
	Tools *[]string `json:"tools,omitempty"`
	// Content, when given, is the conversation's first message: the
	// conversation is made in the same append as its turn, so a refused
	// first message leaves no conversation (the reply's Send names the
	// turn). Not for a temp conversation, whose events are not replayed:
	// subscribe to it, then send.
	Content  []agent.Content `json:"content,omitempty"`
	ClientID string          `json:"client_id,omitempty"`
}

// Settings is the change the fields ask for.
func (r CreateRequest) Settings() agent.Settings {
	s := r.SettingsFields.Settings()
	s.Tools = r.Tools
	return s
}

// UpdateRequest is the body of PATCH /agentik/conversations/{id} and the
// fields of update_conversation.
type UpdateRequest struct {
	Title *string `json:"title,omitempty"`
	SettingsFields
	// Knowledge attaches exactly these knowledge bases; nil leaves them.
	Knowledge *[]string `json:"knowledge,omitempty"`
	// Tools: as CreateRequest's; nil leaves them.
	Tools *[]string `json:"tools,omitempty"`
}

// Settings is the change the fields ask for.
func (r UpdateRequest) Settings() agent.Settings {
	s := r.SettingsFields.Settings()
	s.Tools = r.Tools
	return s
}

// RenameRequest is the body of rename.
type RenameRequest struct {
	Title *string `json:"title"`
}

// SendRequest is the body of send.
type SendRequest struct {
	Content  []agent.Content `json:"content"`
	ClientID string          `json:"client_id"`
	OnBusy   string          `json:"on_busy"` // reject (default), queue or interrupt
	// ActAsAdmin is an admin's explicit wish to write in another user's
	// conversation (agent/actas.go); without it her send there is
	// forbidden, and a member who asks for it is forbidden.
	ActAsAdmin bool `json:"act_as_admin,omitempty"`
}

// ApproveRequest is the body of POST …/approve (the WS op's fields).
type ApproveRequest struct {
	CallID    string          `json:"call_id"`
	Decision  string          `json:"decision"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
}

// AppCallRequest is the body of POST …/app-calls: the tool whose card
// shows the app (App), and the tool it calls with its arguments.
type AppCallRequest struct {
	App       string          `json:"app"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// BranchRequest is the body of regenerate, edit and switch_branch.
type BranchRequest struct {
	MessageID string          `json:"message_id"`
	Content   []agent.Content `json:"content"` // edit
}
