package client

import (
	"context"
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// Prompts lists the prompts of the server's tool servers.
func (c *Client) Prompts(ctx context.Context) ([]agent.Prompt, error) {
	var out protocol.PromptsResult
	err := c.retry(ctx, protocol.Command{Op: protocol.OpListPrompts}, &out)
	return out.Prompts, err
}

// Prompt expands a tool server's prompt with args; expanding stores
// nothing, so it is retried across a reconnect.
func (c *Client) Prompt(ctx context.Context, server, name string, args map[string]string) (agent.PromptResult, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return agent.PromptResult{}, err
	}
	var out agent.PromptResult
	cmd := protocol.Command{Op: protocol.OpGetPrompt, MCPFields: protocol.MCPFields{Server: server}, Arguments: raw}
	cmd.Name = &name
	err = c.retry(ctx, cmd, &out)
	return out, err
}

// Resources lists the resources and templates of the server's tool servers.
func (c *Client) Resources(ctx context.Context) (agent.ResourceList, error) {
	var out agent.ResourceList
	err := c.retry(ctx, protocol.Command{Op: protocol.OpListResources}, &out)
	return out, err
}
