package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/a2a"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/mcpserve"
	"github.com/agentik/agentik/internal/scim"
)

// The protocol packages mounted in routes.go, built over the same runner
// and broker as every other route and behind the same middleware. Each
// declares the small view of an agent it needs; agents is their one source,
// the runner's list of the agents the caller may use (the centre's rule of
// visibility: a member sees shared agents and their own).

// a2aAgent is what A2A shows of an agent definition.
func a2aAgent(d agent.AgentDef) a2a.Agent {
	return a2a.Agent{Slug: d.Slug, Name: d.Name, Description: d.Description, Starters: d.Starters}
}

// defaultAgent is the agent every server has: today's configuration (its
// stored definition, so AGENTIK_AGENTS may redefine it).
func (s *Server) defaultAgent(ctx context.Context) a2a.Agent {
	// The default agent is shared: anyone may see it, and its card is public.
	d, err := s.cfg.Agents.Get(agent.WithPrincipal(ctx, agent.Local), agent.DefaultAgent)
	if err != nil || d.Deleted {
		return a2a.Agent{Slug: agent.DefaultAgent, Name: "agentik", Description: "agentik's default agent: a helpful assistant with the tools this agentik server has."}
	}
	return a2aAgent(d)
}

// agents lists the agents the caller may use, the default first.
func (s *Server) agents(ctx context.Context) ([]a2a.Agent, error) {
	ds, err := s.cfg.Agents.List(ctx)
	if err != nil {
		return nil, err
	}
	out := []a2a.Agent{s.defaultAgent(ctx)}
	for _, d := range ds {
		if d.Slug != agent.DefaultAgent {
			out = append(out, a2aAgent(d))
		}
	}
	return out, nil
}

// newA2A is the A2A handler (internal/a2a).
func (s *Server) newA2A() *a2a.Handler {
	return a2a.New(a2a.Config{KV: s.cfg.A2AKV, PushAllow: s.cfg.PushAllow, SecretKey: s.cfg.SecretKey,
		Runner: s.runner, Conversations: s.convs, Broker: s.broker, Agents: s.agents, Default: s.defaultAgent,
		Auth: s.authOn(), Heartbeat: s.cfg.Heartbeat, Streams: s.streams, Logger: s.log,
	})
}

// newMCP is the MCP server (internal/mcpserve).
func (s *Server) newMCP() *mcpserve.Handler {
	peers := s.cfg.Peers // the database: other instances on PostgreSQL
	return mcpserve.New(mcpserve.Config{
		Runner: s.runner, Conversations: s.convs, Broker: s.broker, Heartbeat: s.cfg.Heartbeat, Streams: s.streams, Logger: s.log,
		Files: s.cfg.Files, Peers: peers,
		Agents: func(ctx context.Context) ([]mcpserve.Agent, error) {
			as, err := s.agents(ctx)
			out := make([]mcpserve.Agent, 0, len(as))
			for _, a := range as {
				out = append(out, mcpserve.Agent{Slug: a.Slug, Name: a.Name, Description: a.Description})
			}
			return out, err
		},
	})
}

// newSCIM is the SCIM 2.0 service provider (internal/scim): its own
// bearer token, its changes made through the accounts and groups the REST
// routes use (the same audit log, the same disable path).
func (s *Server) newSCIM() *scim.Handler {
	return scim.New(scim.Config{Token: s.cfg.SCIMToken, Accounts: s.people.accounts, Groups: s.people.groups, Base: s.baseURL, Logger: s.log})
}

// openCard reports whether r asks for the default agent's A2A card,
// which A2A clients fetch before they know they need a key, or the A2A
// push key that receivers verify pushes with.
func openCard(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == a2a.CardPath || r.URL.Path == a2a.PushKeysPath)
}
