package protocol

import "github.com/agentik/agentik/internal/agent"

// WebSocket ops of agent definitions (docs/PROTOCOL.md, Agents); each
// mirrors its REST route under /agentik/agents.
const (
	OpListAgents  = "list_agents"
	OpGetAgent    = "get_agent"
	OpCreateAgent = "create_agent"
	OpUpdateAgent = "update_agent"
	OpDeleteAgent = "delete_agent"
)

// AgentFields are the fields of an agent a create_agent or update_agent
// carries besides model and params (which the command shares with the
// conversation settings); absent fields stay as they are.
type AgentFields struct {
	Slug         string    `json:"slug,omitempty"`
	Name         *string   `json:"name,omitempty"`
	Description  *string   `json:"description,omitempty"`
	Instructions *string   `json:"instructions,omitempty"`
	Tools        *[]string `json:"tools,omitempty"`
	Approval     *string   `json:"approval,omitempty"`
	Visibility   *string   `json:"visibility,omitempty"`
	Groups       *[]string `json:"groups,omitempty"` // with visibility "group": the groups it is shared with
	Starters     *[]string `json:"starters,omitempty"`
	Knowledge    *[]string `json:"knowledge,omitempty"` // knowledge bases (vs_…) its turns search
}

// AgentRequest is the body of POST /agentik/agents and PATCH
// /agentik/agents/{slug}.
type AgentRequest struct {
	AgentFields
	Model  *string       `json:"model,omitempty"`
	Params *agent.Params `json:"params,omitempty"`
}

// Change is the create or edit the fields ask for.
func (f AgentFields) Change(model *string, params *agent.Params) agent.AgentChange {
	ch := agent.AgentChange{Name: f.Name, Description: f.Description, Instructions: f.Instructions, Model: model, Params: params,
		Tools: f.Tools, Approval: f.Approval, Visibility: f.Visibility, Groups: f.Groups, Starters: f.Starters, Knowledge: f.Knowledge}
	if f.Slug != "" {
		ch.Slug = &f.Slug
	}
	return ch
}

// AgentsResult is the result of list_agents and GET /agentik/agents.
type AgentsResult struct {
	Agents []agent.AgentDef `json:"agents"`
}
