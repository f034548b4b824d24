package server

import (
	"context"
	"io"
	"net/http"

	"github.com/agentik/agentik/internal/protocol"
)

// The agents routes (docs/PROTOCOL.md, Agents): REST under /agentik/agents
// and the WebSocket ops of the same names run the same use cases of the
// runner, with the request's principal.

func (s *Server) handleListAgents(w http.ResponseWriter, r *http.Request) {
	res, err := s.listAgents(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleGetAgent(w http.ResponseWriter, r *http.Request) {
	d, err := s.runner.Agent(r.Context(), r.PathValue("slug"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// readAgentRequest reads an agent body strictly.
func readAgentRequest(r *http.Request) (protocol.AgentRequest, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return protocol.AgentRequest{}, err
	}
	return protocol.DecodeAgentRequest(b)
}

func (s *Server) handleCreateAgent(w http.ResponseWriter, r *http.Request) {
	req, err := readAgentRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.runner.CreateAgent(r.Context(), req.Change(req.Model, req.Params))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, d)
}

func (s *Server) handleUpdateAgent(w http.ResponseWriter, r *http.Request) {
	req, err := readAgentRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.runner.UpdateAgent(r.Context(), r.PathValue("slug"), req.Change(req.Model, req.Params))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) handleDeleteAgent(w http.ResponseWriter, r *http.Request) {
	if err := s.runner.DeleteAgent(r.Context(), r.PathValue("slug")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listAgents(ctx context.Context) (protocol.AgentsResult, error) {
	ds, err := s.runner.Agents(ctx)
	if err != nil {
		return protocol.AgentsResult{}, err
	}
	return protocol.AgentsResult{Agents: ds}, nil
}

// agentOp runs the agent ops of the WebSocket; ok is false for other ops.
func (s *Server) agentOp(ctx context.Context, cmd protocol.Command) (res any, ok bool, err error) {
	r := s.runner
	switch cmd.Op {
	case protocol.OpListAgents:
		res, err = s.listAgents(ctx)
	case protocol.OpCreateAgent:
		res, err = r.CreateAgent(ctx, cmd.Change(cmd.Model, cmd.Params))
	case protocol.OpUpdateAgent:
		ch := cmd.Change(cmd.Model, cmd.Params)
		ch.Slug = nil
		res, err = r.UpdateAgent(ctx, cmd.Slug, ch)
	case protocol.OpDeleteAgent:
		res, err = protocol.Empty{}, r.DeleteAgent(ctx, cmd.Slug)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return res, true, nil
}
