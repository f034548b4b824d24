package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The agent ops (docs/PROTOCOL.md, Agents), each the REST route under
// /agentik/agents and the WebSocket op of its name (op.go): the runner's
// use cases with the request's principal.

// agentRef names one agent: the field slug, the route's {slug}.
type agentRef struct {
	Slug string `json:"slug"`
}

func (r *agentRef) check() error { return need("slug", r.Slug) }

// agentInput is a create_agent or update_agent. Its body or frame is read
// strictly: an unknown field is a bad_request naming it (a misspelt field
// would otherwise be dropped silently).
type agentInput struct {
	protocol.AgentRequest
}

func (in *agentInput) check() error { return need("slug", in.Slug) }

func (in *agentInput) decode(b []byte) error {
	var v struct {
		Op string `json:"op"` // a WebSocket command's own fields
		ID string `json:"id"`
		protocol.AgentRequest
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return agent.Errorf(agent.CodeBadRequest, "an agent is an object of slug, name, description, instructions, model, params, tools, approval, visibility, groups, starters and knowledge: %s", protocol.JSONProblem(b, err))
	}
	in.AgentRequest = v.AgentRequest
	return nil
}

func (in agentInput) change() agent.AgentChange { return in.Change(in.Model, in.Params) }

// agentCreate is a create_agent: without a slug, one is made from the
// name (agent.SlugOf).
type agentCreate struct {
	agentInput
}

func (in *agentCreate) check() error { return nil }

var (
	opListAgents = declare(protocol.OpListAgents, 0, func(ctx context.Context, s *Server, _ struct{}) (any, error) {
		ds, err := s.cfg.Agents.List(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.AgentsResult{Agents: ds}, nil
	})
	opGetAgent = declare(protocol.OpGetAgent, 0, func(ctx context.Context, s *Server, in agentRef) (any, error) {
		return s.cfg.Agents.Get(ctx, in.Slug)
	})
	opCreateAgent = declare(protocol.OpCreateAgent, http.StatusCreated, func(ctx context.Context, s *Server, in agentCreate) (any, error) {
		return s.cfg.Agents.Create(ctx, in.change())
	})
	opUpdateAgent = declare(protocol.OpUpdateAgent, 0, func(ctx context.Context, s *Server, in agentInput) (any, error) {
		return s.cfg.Agents.Update(ctx, in.Slug, in.change())
	})
	opDeleteAgent = declare(protocol.OpDeleteAgent, http.StatusNoContent, func(ctx context.Context, s *Server, in agentRef) (any, error) {
		return protocol.Empty{}, s.cfg.Agents.Delete(ctx, in.Slug)
	})
)

// handleAgentsPage is the agents page: the agents the reader may chat
// with (list_agents' answer), each editable where they may change it.
func (s *Server) handleAgentsPage(w http.ResponseWriter, r *http.Request) {
	defs, err := s.cfg.Agents.List(r.Context())
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	s.renderSection(w, r, "agents", "Agents", web.Agents(web.AgentsPage{Agents: defs}))
}
