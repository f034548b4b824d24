package client

import (
	"context"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/server"
)

// CreateConversationWith makes a conversation with settings (model,
// system prompt, params); absent ones are the server's defaults.
func (c *Client) CreateConversationWith(ctx context.Context, title string, temp bool, s server.SettingsFields) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.call(ctx, server.Command{Op: server.OpCreateConversation, Title: &title, Temp: temp, SettingsFields: s}, &out, nil)
	return out, err
}

// UpdateConversation changes a conversation's settings; the next turn
// uses them.
func (c *Client) UpdateConversation(ctx context.Context, id string, s server.SettingsFields) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.call(ctx, server.Command{Op: server.OpUpdateConversation, ConversationID: id, SettingsFields: s}, &out, nil)
	return out, err
}

// Models lists the models conversations may use and the default.
func (c *Client) Models(ctx context.Context) (server.ModelsResult, error) {
	var out server.ModelsResult
	err := c.retry(ctx, server.Command{Op: server.OpListModels}, &out)
	return out, err
}
