package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// sseWriteTimeout bounds every write to an SSE client.
const sseWriteTimeout = 10 * time.Second

// sseBatch is how many items an SSE stream's reader may have ready ahead
// of its writer; the writer sends whatever is ready (up to sseBatchBytes)
// in one write and one flush, so a replay costs few writes.
const (
	sseBatch      = 64
	sseBatchBytes = 64 << 10
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
			return s.cursorAt(r, t, "")
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

// cursorIndex turns instants into cursors (the store implements it).
type cursorIndex interface {
	CursorAt(ctx context.Context, t time.Time) (int64, error)
	MessageCursorAt(ctx context.Context, conversationID string, t time.Time) (int64, error)
}

// cursorAt is the cursor just before the first event (with a
// conversationID: message) at or after t.
func (s *Server) cursorAt(r *http.Request, t time.Time, conversationID string) (int64, error) {
	ix, ok := s.store.(cursorIndex)
	if !ok {
		return 0, agent.Errorf(agent.CodeBadRequest, "after must be a seq here: this store cannot look up times")
	}
	if conversationID != "" {
		return ix.MessageCursorAt(r.Context(), conversationID, t)
	}
	return ix.CursorAt(r.Context(), t)
}

func (s *Server) subscribeSSE(w http.ResponseWriter, r *http.Request, stream broker.Stream, frame frameFunc) {
	after, err := s.cursor(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, err := s.broker.Subscribe(r.Context(), stream, after, "")
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
	id := r.PathValue("id")
	if _, err := s.runner.Conversation(r.Context(), id); err != nil {
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
// shuts down, or (untilEnd) the turn's end event.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, sub *broker.Sub, frame frameFunc, untilEnd bool) {
	defer sub.Close()
	if !s.hold() {
		s.writeError(w, r, errShuttingDown)
		return
	}
	defer s.conns.Done()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Buffered, so a replay's frames queue up while one is written and
	// are flushed together.
	items := make(chan broker.Item, sseBatch)
	errc := make(chan error, 1) // why the reader stopped
	readerDone := make(chan struct{})
	go func() { // the reader: owned here, ends when ctx is cancelled
		defer close(readerDone)
		for {
			it, err := sub.Next(ctx)
			if err != nil {
				errc <- err
				return
			}
			select {
			case items <- it:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-readerDone }()

	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	var buf []byte
	// frame appends it's frame to buf; it reports whether the stream ends
	// after it.
	frameOf := func(it broker.Item) bool {
		if it.CaughtUp {
			return false
		}
		b := frame(it.Event)
		if b == nil {
			return false
		}
		if it.Event.Seq != 0 {
			buf = append(buf, "id: "...)
			buf = strconv.AppendInt(buf, it.Event.Seq, 10)
			buf = append(buf, '\n')
		}
		buf = append(buf, "event: "...)
		buf = append(buf, it.Event.Type...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, b...)
		buf = append(buf, "\n\n"...)
		return untilEnd && it.Event.IsEnd()
	}
	for {
		select {
		case <-s.closing:
			return
		case <-heartbeat.C:
			if !write([]byte(": heartbeat\n\n")) {
				return
			}
		case err := <-errc:
			var re *broker.ResyncError
			if errors.As(err, &re) {
				b, _ := json.Marshal(map[string]any{"reason": re.Reason, "after": re.After})
				write(fmt.Appendf(nil, "event: resync\ndata: %s\n\n", b))
			}
			return
		case it := <-items:
			// This item and whatever else is ready: one write, one flush.
			buf = buf[:0]
			end := frameOf(it)
		batch:
			for !end && len(buf) < sseBatchBytes {
				select {
				case it := <-items:
					end = frameOf(it)
				default:
					break batch
				}
			}
			if len(buf) == 0 {
				continue
			}
			if !write(buf) {
				return
			}
			heartbeat.Reset(s.cfg.Heartbeat)
			if end {
				return
			}
		}
	}
}
