package client

import (
	"context"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// CreateConversationWith makes a conversation with settings (model,
// system prompt, params); absent ones are the server's defaults.
func (c *Client) CreateConversationWith(ctx context.Context, title string, temp bool, s protocol.SettingsFields) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.call(ctx, protocol.Command{Op: protocol.OpCreateConversation, Title: &title, Temp: temp, SettingsFields: s}, &out, nil)
	return out, err
}

// UpdateConversation changes a conversation's settings; the next turn
// uses them.
func (c *Client) UpdateConversation(ctx context.Context, id string, s protocol.SettingsFields) (agent.Conversation, error) {
	var out agent.Conversation
	err := c.call(ctx, protocol.Command{Op: protocol.OpUpdateConversation, ConversationID: id, SettingsFields: s}, &out, nil)
	return out, err
}

// Models lists the models conversations may use and the default.
func (c *Client) Models(ctx context.Context) (protocol.ModelsResult, error) {
	var out protocol.ModelsResult
	err := c.retry(ctx, protocol.Command{Op: protocol.OpListModels}, &out)
	return out, err
}
