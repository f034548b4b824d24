package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

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
	evs, err := s.store.EncodedEvents(r.Context(), s.runner.ScopeEvents(r.Context(), agent.EventQuery{After: after, ConversationID: convID, Limit: int(limit)}))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	next := afterID
	if len(evs) > 0 {
		next = evs[len(evs)-1].ID
	}
	writeReplay(w, evs, next)
}

// writeReplay writes a ReplayResult from the stored bytes of its events,
// decoding and encoding nothing (the store bounds the page by bytes).
func writeReplay(w http.ResponseWriter, evs []agent.Encoded, next string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(`{"events":[`)
	for i := range evs {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(evs[i].JSON)
		evs[i] = agent.Encoded{} // let it go once written
	}
	nb, _ := json.Marshal(next)
	bw.WriteString(`],"next_after_id":`)
	bw.Write(nb)
	bw.WriteString("}\n")
	_ = bw.Flush()
}

func (s *Server) handleReplay(w http.ResponseWriter, r *http.Request) { s.replay(w, r, "") }

func (s *Server) handleConversationReplay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("conversation_id")
	if _, err := s.convs.Get(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.replay(w, r, id)
}

// toolServers are the tool servers as the principal of ctx sees them (a
// server they must sign in to carries their link: oauth.go).
func (s *Server) toolServers(ctx context.Context) protocol.ToolsResult {
	res := protocol.ToolsResult{Servers: []agent.ToolServer{}}
	if ps := s.cfg.ToolsFor; ps != nil {
		res.Servers = append(res.Servers, ps.ServersFor(ctx)...)
	} else if s.tools != nil {
		res.Servers = append(res.Servers, s.tools.Servers()...)
	}
	return res
}

// opListTools is the state of the tool servers (an extension).
var opListTools = declare(protocol.OpListTools, 0, func(ctx context.Context, s *Server, _ struct{}) (any, error) {
	return s.toolServers(ctx), nil
})

// intParam reads an integer query parameter with a default.
func intParam(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, agent.Errorf(agent.CodeBadRequest, "%s must be an integer, got %q", name, v)
	}
	return n, nil
}
