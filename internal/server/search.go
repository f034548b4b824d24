package server

import (
	"context"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// search runs a search box's query: its text and how many results at most.
func (s *Server) search(ctx context.Context, text string, limit int) (protocol.SearchResults, error) {
	q, err := agent.ParseSearch(text, limit)
	if err != nil {
		return protocol.SearchResults{}, err
	}
	res, err := s.convs.Search(ctx, q) // the principal's conversations only
	if err != nil {
		return protocol.SearchResults{}, err
	}
	if res == nil {
		res = []agent.SearchResult{}
	}
	return protocol.SearchResults{Results: res}, nil
}

// searchQuery is a search: the box's text and how many results at most
// (absent: agent.DefaultSearchLimit).
type searchQuery struct {
	Q     string  `json:"q"`
	Limit integer `json:"limit"`
}

func (q *searchQuery) check() error {
	if l := q.Limit.or(agent.DefaultSearchLimit); l < 1 || l > agent.MaxSearchLimit {
		return agent.Errorf(agent.CodeBadRequest, "limit must be between 1 and %d, got %d", agent.MaxSearchLimit, l)
	}
	return nil
}

var opSearch = declare(protocol.OpSearch, 0, func(ctx context.Context, s *Server, in searchQuery) (any, error) {
	return s.search(ctx, in.Q, int(in.Limit.or(agent.DefaultSearchLimit)))
})
