package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// frameFunc gives the data of an SSE frame for an event: a slice of the
// bytes it was stored as; nil skips it.
type frameFunc func(e *agent.Encoded) []byte

// conversationFrame is the inner Event of a conversation's event.
func conversationFrame(e *agent.Encoded) []byte {
	if e.Kind != agent.KindConversation {
		return nil
	}
	return e.Inner()
}

// agentFrame is the inner AgentEvent of an agent event.
func agentFrame(e *agent.Encoded) []byte {
	if e.Kind != agent.KindAgent {
		return nil
	}
	return e.Inner()
}

// allFrame is the whole AllEvent.
func allFrame(e *agent.Encoded) []byte { return e.JSON }

// cursor reads where an SSE client resumes: Last-Event-ID, else ?after=,
// else -1 (live only).
func (s *Server) cursor(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return -1, nil
	}
	if name == "after" {
		if t, ok := instant(v); ok {
			return s.cursorAt(r.Context(), t, "")
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, agent.Errorf(agent.CodeBadRequest, "%s must be a seq (an integer ≥ 0) or an RFC 3339 time, got %q", name, v)
	}
	return n, nil
}

// instant parses an RFC 3339 time, as the original facade's ?after= was.
func instant(v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// CursorIndex turns instants into cursors (Config.Cursors: the
// database's).
type CursorIndex interface {
	CursorAt(ctx context.Context, t time.Time) (int64, error)
	MessageCursorAt(ctx context.Context, conversationID string, t time.Time) (int64, error)
}

// cursorAt is the cursor just before the first event (with a
// conversationID: message) at or after t.
func (s *Server) cursorAt(ctx context.Context, t time.Time, conversationID string) (int64, error) {
	ix := s.cfg.Cursors
	if ix == nil {
		return 0, agent.Errorf(agent.CodeBadRequest, "after must be a seq here: this store cannot look up times")
	}
	if conversationID != "" {
		return ix.MessageCursorAt(ctx, conversationID, t)
	}
	return ix.CursorAt(ctx, t)
}

func (s *Server) subscribeSSE(w http.ResponseWriter, r *http.Request, stream broker.Stream, frame frameFunc) {
	after, err := s.cursor(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := relay.Subscribe(r.Context(), s.broker, stream, after)
	if err != nil {
		var re *broker.ResyncError
		if errors.As(err, &re) {
			err = agent.Errorf(agent.CodeBadRequest, "cannot resume after %d (%s); reload history and subscribe without Last-Event-ID", after, re.Reason)
			if re.Reason == broker.ReasonPruned {
				err = agent.Errorf(agent.CodeBadRequest, "cannot resume after %d (pruned: the retained log starts after %d); reload history and subscribe without Last-Event-ID, or after %d", after, re.Start, re.Start)
			}
		}
		s.writeError(w, r, err)
		return
	}
	s.serveSSE(w, r, sub, frame, false)
}

func (s *Server) handleConversationEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("conversation_id")
	if _, err := s.convs.Get(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.subscribeSSE(w, r, broker.Stream{Kind: broker.StreamConversation, ConversationID: id}, conversationFrame)
}

func (s *Server) handleAgentEvents(w http.ResponseWriter, r *http.Request) {
	s.subscribeSSE(w, r, broker.Stream{Kind: broker.StreamAgent}, agentFrame)
}

func (s *Server) handleAllEvents(w http.ResponseWriter, r *http.Request) {
	s.subscribeSSE(w, r, broker.Stream{Kind: broker.StreamAll}, allFrame)
}

// serveSSE streams a subscription until the client leaves, the server
// shuts down, or (untilEnd) the turn's end event: relay.Follow, with each
// event's frame as it was stored (its seq the frame's id), a comment on an
// idle stream, and a resync event when the subscription is dropped.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, sub *relay.Sub, frame frameFunc, untilEnd bool) {
	defer sub.Close()
	if !s.streams.Hold() {
		s.writeError(w, r, errShuttingDown)
		return
	}
	defer s.streams.Release()
	p := relay.ProjectionFunc(func(e *agent.Encoded) ([]relay.Frame, bool) {
		b := frame(e)
		if b == nil {
			return nil, false
		}
		return []relay.Frame{{Seq: e.Seq, Event: e.Type, Data: b}}, untilEnd && e.IsEnd()
	})
	cut := func(err error) []relay.Frame {
		var re *broker.ResyncError
		if !errors.As(err, &re) {
			return nil
		}
		b, _ := json.Marshal(map[string]any{"reason": re.Reason, "after": re.After})
		return []relay.Frame{{Event: "resync", Data: b}}
	}
	_ = relay.Follow{Sink: relay.SSE(sse.Start(w)), Heartbeat: s.cfg.Heartbeat, Comment: "heartbeat", Closing: s.closing, Cut: cut}.Run(r.Context(), sub, p)
}
