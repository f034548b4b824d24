package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/protocol"
)

// decodeBody decodes a JSON body into v. An empty body leaves v as is when
// empty is allowed.
func decodeBody(r *http.Request, v any, empty bool) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return agent.Errorf(agent.CodeBadRequest, "read body: %v", err)
	}
	if len(b) == 0 && empty {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return agent.Errorf(agent.CodeBadRequest, "the body must be a JSON object: %s", protocol.JSONProblem(b, err))
	}
	return nil
}

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

// page reads offset and limit.
func page(r *http.Request) (offset, limit int, err error) {
	o, err := intParam(r, "offset", 0)
	if err != nil {
		return 0, 0, err
	}
	l, err := intParam(r, "limit", agent.DefaultPageSize)
	if err != nil {
		return 0, 0, err
	}
	if o < 0 || o > 1<<31 {
		return 0, 0, agent.Errorf(agent.CodeBadRequest, "offset must be 0 or more, got %d", o)
	}
	if l < 1 || l > agent.MaxPageSize {
		return 0, 0, agent.Errorf(agent.CodeBadRequest, "limit must be between 1 and %d, got %d", agent.MaxPageSize, l)
	}
	return int(o), int(l), nil
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Error("health_db_failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "database": "ok", "model": s.modelName, "model_configured": s.runner.ModelConfigured()})
}

func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, agent.Errorf(agent.CodeNotFound, "no route %s %s; see docs/PROTOCOL.md", r.Method, r.URL.Path))
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var req protocol.CreateRequest
	if err := decodeBody(r, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.runner.CreateConversationWith(r.Context(), req.Title, req.Temp, req.Settings())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeList(w, r, offset, limit)
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	c, err := s.runner.Conversation(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var after int64
	if t, ok := instant(r.URL.Query().Get("after")); ok {
		after, err = s.cursorAt(r, t, r.PathValue("id"))
	} else {
		after, err = intParam(r, "after", 0)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := agent.MessageQuery{ConversationID: r.PathValue("id"), After: after, Offset: offset, Limit: limit}
	if q.All, err = allBranches(r.URL.Query().Get("branch")); err != nil {
		s.writeError(w, r, err)
		return
	}
	ms, err := s.runner.Messages(r.Context(), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.MessagesResult{Messages: ms})
}

func (s *Server) handleRename(w http.ResponseWriter, r *http.Request) {
	var req protocol.RenameRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Title == nil {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "title is required, e.g. {\"title\":\"Trip plans\"}"))
		return
	}
	c, err := s.runner.Rename(r.Context(), r.PathValue("id"), *req.Title)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.runner.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleInterrupt(w http.ResponseWriter, r *http.Request) {
	ok, err := s.runner.Interrupt(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"interrupted": ok})
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req protocol.SendRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	stream := broker.Stream{Kind: broker.StreamConversation, ConversationID: id}
	var sub *broker.Sub
	var err error
	if s.runner.IsTemp(id) { // never stored: listen before the turn starts
		if sub, err = s.broker.Subscribe(r.Context(), stream, -1, ""); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	res, err := s.runner.SendBusy(r.Context(), id, req.Content, req.ClientID, req.OnBusy)
	if err != nil {
		if sub != nil {
			sub.Close()
		}
		s.writeError(w, r, err)
		return
	}
	if res.Queued {
		if sub != nil {
			sub.Close()
		}
		writeQueued(w, res)
		return
	}
	if res.Duplicate {
		if sub != nil {
			sub.Close()
		}
		writeJSON(w, http.StatusOK, map[string]any{"message_id": res.MessageID, "duplicate": true})
		return
	}
	if sub == nil {
		// Replay from the user's message: nothing of the turn is missed.
		if sub, err = s.broker.Subscribe(r.Context(), stream, res.Seq-1, ""); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.serveSSE(w, r, sub, conversationFrame, true)
}
