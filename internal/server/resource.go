package server

import (
	"context"

	"github.com/agentik/agentik/internal/protocol"
)

// The tool servers' resources and prompts (docs/PROTOCOL.md, Resources
// and prompts), each the REST route under /agentik/resources or
// /agentik/prompts and the WebSocket op of its name (op.go): the runner
// checks the principal (agent/resource.go).

// resourceRef names one resource of one tool server.
type resourceRef struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

func (r *resourceRef) check() error {
	if err := need("server", r.Server); err != nil {
		return err
	}
	return need("uri", r.URI)
}

// promptInput is a get_prompt: the server, the prompt's name and its
// arguments (an object of strings).
type promptInput struct {
	protocol.PromptRequest
	args map[string]string
}

func (in *promptInput) check() error {
	if err := need("server", in.Server); err != nil {
		return err
	}
	if err := need("name", in.Name); err != nil {
		return err
	}
	var err error
	in.args, err = protocol.PromptArguments(in.Arguments)
	return err
}

var (
	opListResources = declare(protocol.OpListResources, 0, func(ctx context.Context, s *Server, _ struct{}) (any, error) {
		return s.cfg.Resources.List(ctx)
	})
	opReadResource = declare(protocol.OpReadResource, 0, func(ctx context.Context, s *Server, in resourceRef) (any, error) {
		return s.cfg.Resources.Read(ctx, in.Server, in.URI)
	})
	opListPrompts = declare(protocol.OpListPrompts, 0, func(ctx context.Context, s *Server, _ struct{}) (any, error) {
		ps, err := s.cfg.Resources.Prompts(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.PromptsResult{Prompts: ps}, nil
	})
	opGetPrompt = declare(protocol.OpGetPrompt, 0, func(ctx context.Context, s *Server, in promptInput) (any, error) {
		return s.cfg.Resources.Prompt(ctx, in.Server, in.Name, in.args)
	})
)
