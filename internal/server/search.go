package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// SearchResults is the result of search (GET /agentik/search and the WS op).
type SearchResults struct {
	Results []agent.SearchResult `json:"results"`
}

// search runs a search box's query: text and limit as the client sent them
// (limit 0: the default).
func (s *Server) search(ctx context.Context, text string, limit int) (SearchResults, error) {
	q, err := agent.ParseSearch(text, limit)
	if err != nil {
		return SearchResults{}, err
	}
	if s.searcher == nil {
		return SearchResults{}, agent.Errorf(agent.CodeUnavailable, "this server's store does not search")
	}
	res, err := s.searcher.Search(ctx, q)
	if err != nil {
		return SearchResults{}, err
	}
	if res == nil {
		res = []agent.SearchResult{}
	}
	return SearchResults{res}, nil
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
