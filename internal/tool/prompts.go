package tool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/mcp"
)

// Prompts (MCP prompts/list, prompts/get) follow the 2025-11-25 revision,
// as resources do. The Manager implements agent.Prompts.

var _ agent.Prompts = (*Manager)(nil)

// Prompts lists the prompts of every ready server that has any, in config
// order; a server whose listing fails is left out (and logged).
func (m *Manager) Prompts(ctx context.Context) ([]agent.Prompt, error) {
	m.WaitStarted(ctx)
	out := []agent.Prompt{}
	for _, s := range m.list() {
		sess := s.ready()
		if sess == nil || sess.client.GetServerCapabilities().Prompts == nil {
			continue
		}
		ps, err := s.listPrompts(ctx, sess)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.log.Warn("mcp_list_prompts", "err", s.cfg.redact(err.Error()))
			continue
		}
		out = append(out, ps...)
	}
	return out, nil
}

// listPrompts lists one server's prompts, all pages.
func (s *supervisor) listPrompts(ctx context.Context, sess *session) ([]agent.Prompt, error) {
	ctx, cancel := context.WithTimeout(ctx, s.m.opt.CallTimeout)
	defer cancel()
	res, err := sess.client.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		sess.failIfBroken(ctx, err)
		return nil, fmt.Errorf("list prompts: %w", err)
	}
	out := make([]agent.Prompt, 0, len(res.Prompts))
	for _, p := range res.Prompts {
		args := make([]agent.PromptArgument, 0, len(p.Arguments))
		for _, a := range p.Arguments {
			args = append(args, agent.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		out = append(out, agent.Prompt{Server: s.cfg.Name, Name: p.Name, Title: p.Title, Description: p.Description, Arguments: args})
	}
	return out, nil
}

// Prompt expands prompt name of server with args. The prompt and its
// arguments are checked against the server's listing first, so a missing
// required argument is a bad_request naming it, not whatever the server
// would answer.
func (m *Manager) Prompt(ctx context.Context, server, name string, args map[string]string) (agent.PromptResult, error) {
	s, sess, err := m.readyServer(ctx, server)
	if err != nil {
		return agent.PromptResult{}, err
	}
	if sess.client.GetServerCapabilities().Prompts == nil {
		return agent.PromptResult{}, agent.Errorf(agent.CodeNotFound, "tool server %q has no prompts", server)
	}
	ps, err := s.listPrompts(ctx, sess)
	if err != nil {
		return agent.PromptResult{}, s.requestError(ctx, sess, err, fmt.Sprintf("the prompts of tool server %q", server))
	}
	i := slices.IndexFunc(ps, func(p agent.Prompt) bool { return p.Name == name })
	if i < 0 {
		return agent.PromptResult{}, agent.Errorf(agent.CodeNotFound, "prompt %q of tool server %q not found; GET /agentik/prompts lists them", name, server)
	}
	if err := checkPromptArgs(ps[i], args); err != nil {
		return agent.PromptResult{}, err
	}
	gctx, cancel := context.WithTimeout(ctx, m.opt.CallTimeout)
	defer cancel()
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := sess.client.GetPrompt(gctx, req)
	if err != nil {
		return agent.PromptResult{}, s.requestError(gctx, sess, err, fmt.Sprintf("prompt %q of tool server %q", name, server))
	}
	out := agent.PromptResult{Server: server, Name: name, Description: res.Description, Messages: make([]agent.PromptMessage, 0, len(res.Messages))}
	for _, msg := range res.Messages {
		out.Messages = append(out.Messages, agent.PromptMessage{Role: string(msg.Role), Content: s.promptContent(msg.Content)})
	}
	return out, nil
}

// checkPromptArgs checks args against what prompt p takes.
func checkPromptArgs(p agent.Prompt, args map[string]string) error {
	var names []string
	for _, a := range p.Arguments {
		names = append(names, a.Name)
		if v, ok := args[a.Name]; a.Required && (!ok || strings.TrimSpace(v) == "") {
			return agent.Errorf(agent.CodeBadRequest, "prompt %q needs argument %q%s", p.Name, a.Name, describe(a.Description))
		}
	}
	for k := range args {
		if !slices.Contains(names, k) {
			takes := "no arguments"
			if len(names) > 0 {
				takes = "arguments " + strings.Join(names, ", ")
			}
			return agent.Errorf(agent.CodeBadRequest, "prompt %q has no argument %q; it takes %s", p.Name, k, takes)
		}
	}
	return nil
}

func describe(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// promptContent is one part of a prompt message as agent content: text,
// an image, a resource reference (an embedded resource or a link: sent,
// it is read again), or, for audio and the rest, a description.
func (s *supervisor) promptContent(c mcp.Content) []agent.Content {
	switch v := c.(type) {
	case mcp.TextContent:
		return []agent.Content{agent.Text(v.Text)}
	case mcp.ImageContent:
		return []agent.Content{{Type: agent.ContentImage, Mime: v.MIMEType, Data: v.Data}}
	case mcp.EmbeddedResource:
		switch r := v.Resource.(type) {
		case mcp.TextResourceContents:
			return []agent.Content{{Type: agent.ContentResource, Server: s.cfg.Name, URI: r.URI}}
		case mcp.BlobResourceContents:
			return []agent.Content{{Type: agent.ContentResource, Server: s.cfg.Name, URI: r.URI}}
		}
	case mcp.ResourceLink:
		return []agent.Content{{Type: agent.ContentResource, Server: s.cfg.Name, URI: v.URI, Name: v.Name}}
	case mcp.AudioContent:
		return []agent.Content{agent.Text(fmt.Sprintf("[audio %s, %d bytes of base64]", v.MIMEType, len(v.Data)))}
	}
	return nil
}
