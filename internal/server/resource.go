package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/protocol"
)

// The tool servers' resources and prompts (docs/PROTOCOL.md, Resources
// and prompts): REST under /agentik/resources and /agentik/prompts and the
// WebSocket ops of the same names run the same use cases of the runner,
// which checks the principal (agent/resource.go).

func (s *Server) handleResources(w http.ResponseWriter, r *http.Request) {
	res, err := s.runner.Resources(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleReadResource(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	res, err := s.runner.ReadResource(r.Context(), q.Get("server"), q.Get("uri"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handlePrompts(w http.ResponseWriter, r *http.Request) {
	res, err := s.listPrompts(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleGetPrompt(w http.ResponseWriter, r *http.Request) {
	var req protocol.PromptRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.getPrompt(r.Context(), req.Server, req.Name, req.Arguments)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) listPrompts(ctx context.Context) (protocol.PromptsResult, error) {
	ps, err := s.runner.Prompts(ctx)
	if err != nil {
		return protocol.PromptsResult{}, err
	}
	return protocol.PromptsResult{Prompts: ps}, nil
}

func (s *Server) getPrompt(ctx context.Context, server, name string, raw []byte) (any, error) {
	args, err := protocol.PromptArguments(raw)
	if err != nil {
		return nil, err
	}
	return s.runner.Prompt(ctx, server, name, args)
}

// mcpOp runs the resource and prompt ops of the WebSocket; ok is false for
// other ops.
func (s *Server) mcpOp(ctx context.Context, cmd protocol.Command) (res any, ok bool, err error) {
	switch cmd.Op {
	case protocol.OpListResources:
		res, err = s.runner.Resources(ctx)
	case protocol.OpReadResource:
		res, err = s.runner.ReadResource(ctx, cmd.Server, cmd.URI)
	case protocol.OpListPrompts:
		res, err = s.listPrompts(ctx)
	case protocol.OpGetPrompt:
		res, err = s.getPrompt(ctx, cmd.Server, *cmd.Name, cmd.Arguments)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return res, true, nil
}
