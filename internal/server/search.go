package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// search runs a search box's query: text and limit as the client sent them
// (limit 0: the default).
func (s *Server) search(ctx context.Context, text string, limit int) (protocol.SearchResults, error) {
	q, err := agent.ParseSearch(text, limit)
	if err != nil {
		return protocol.SearchResults{}, err
	}
	if s.searcher == nil {
		return protocol.SearchResults{}, agent.Errorf(agent.CodeUnavailable, "this server's store does not search")
	}
	res, err := s.runner.Search(ctx, s.searcher, q) // the principal's conversations only
	if err != nil {
		return protocol.SearchResults{}, err
	}
	if res == nil {
		res = []agent.SearchResult{}
	}
	return protocol.SearchResults{Results: res}, nil
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", agent.DefaultSearchLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if limit < 1 || limit > agent.MaxSearchLimit {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "limit must be between 1 and %d, got %d", agent.MaxSearchLimit, limit))
		return
	}
	res, err := s.search(r.Context(), r.URL.Query().Get("q"), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
