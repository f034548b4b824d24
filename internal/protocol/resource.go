package protocol

import (
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// WebSocket ops of the tool servers' resources and prompts
// (docs/PROTOCOL.md, Resources and prompts); each mirrors its REST route.
const (
	OpListResources = "list_resources" // GET /agentik/resources
	OpReadResource  = "read_resource"  // GET /agentik/resources/read?server=&uri=
	OpListPrompts   = "list_prompts"   // GET /agentik/prompts
	OpGetPrompt     = "get_prompt"     // POST /agentik/prompts/get
)

// MCPFields are the fields of read_resource and get_prompt besides name
// (the prompt's, shared with the agent ops) and arguments (shared with
// approve).
type MCPFields struct {
	Server string `json:"server,omitempty"`
	URI    string `json:"uri,omitempty"`
}

// PromptsResult is the result of list_prompts and GET /agentik/prompts.
type PromptsResult struct {
	Prompts []agent.Prompt `json:"prompts"`
}

// PromptRequest is the body of POST /agentik/prompts/get.
type PromptRequest struct {
	Server    string          `json:"server"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// PromptArguments decodes a prompt's arguments: an object of strings
// (absent or null: none).
func PromptArguments(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]string{}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "arguments must be an object of strings, e.g. {\"city\":\"Lyon\"}")
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, agent.Errorf(agent.CodeBadRequest, "argument %q must be a string, got %s", k, agent.Shorten(string(v), 40))
		}
		out[k] = s
	}
	return out, nil
}
