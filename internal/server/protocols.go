package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/a2a"
	"github.com/agentik/agentik/internal/mcpserve"
)

// The protocol packages mounted in routes.go, built over the same runner
// and broker as every other route and behind the same middleware. Each
// declares the small view of an agent it needs; agents is their one source.

// defaultAgent is the agent every server has: today's configuration.
func defaultAgent() a2a.Agent {
	return a2a.Agent{Slug: "agentik", Name: "agentik", Description: "agentik's default agent: a helpful assistant with the tools this agentik server has."}
}

// agents lists the agents the caller may use, the default first. (Until
// stored agent definitions land, the default agent is the only one.)
func (s *Server) agents(context.Context) ([]a2a.Agent, error) {
	return []a2a.Agent{defaultAgent()}, nil
}

// newA2A is the A2A handler (internal/a2a).
func (s *Server) newA2A() *a2a.Handler {
	kv, _ := s.store.(a2a.KV)
	return a2a.New(a2a.Config{KV: kv,
		Runner: s.runner, Broker: s.broker, Agents: s.agents, Default: defaultAgent,
		Auth: s.authOn(), Heartbeat: s.cfg.Heartbeat, Streams: s.streams, Logger: s.log,
	})
}

// newMCP is the MCP server (internal/mcpserve).
func (s *Server) newMCP() *mcpserve.Handler {
	return mcpserve.New(mcpserve.Config{
		Runner: s.runner, Broker: s.broker, Heartbeat: s.cfg.Heartbeat, Streams: s.streams, Logger: s.log,
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

// openCard reports whether r asks for the default agent's A2A card,
// which A2A clients fetch before they know they need a key.
func openCard(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == a2a.CardPath
}
