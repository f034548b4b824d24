package server

import (
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// ReplayResult is a page of stored events.
type ReplayResult struct {
	Events      []agent.AllEvent `json:"events"`
	NextAfterID string           `json:"next_after_id"`
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request, convID string) {
	limit, err := intParam(r, "limit", agent.DefaultPageSize)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if limit < 1 || limit > agent.MaxPageSize {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "limit must be between 1 and %d, got %d", agent.MaxPageSize, limit))
		return
	}
	afterID := r.URL.Query().Get("after_id")
	var after int64
	if afterID != "" {
		if after, err = s.store.EventSeq(r.Context(), afterID); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	evs, err := s.store.Events(r.Context(), agent.EventQuery{After: after, ConversationID: convID, Limit: int(limit)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	next := afterID
	if len(evs) > 0 {
		next = evs[len(evs)-1].ID
	}
	if evs == nil {
		evs = []agent.AllEvent{}
	}
	writeJSON(w, http.StatusOK, ReplayResult{evs, next})
}

func (s *Server) handleReplay(w http.ResponseWriter, r *http.Request) { s.replay(w, r, "") }

func (s *Server) handleConversationReplay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.runner.Conversation(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.replay(w, r, id)
}

// ToolsResult is the state of the tool servers.
type ToolsResult struct {
	Servers []agent.ToolServer `json:"servers"`
}

func (s *Server) toolServers() ToolsResult {
	res := ToolsResult{Servers: []agent.ToolServer{}}
	if s.tools != nil {
		res.Servers = append(res.Servers, s.tools.Servers()...)
	}
	return res
}

func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.toolServers())
}
