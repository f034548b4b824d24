// Package aisdk serves the Vercel AI SDK's UI message stream (DESIGN
// §11.7), so that an app built on `useChat` (the `ai` package's
// DefaultChatTransport) talks to agentik with no server code of its own:
//
//	POST /agentik/ai-sdk/chat              useChat's request → the answer as a UI message stream
//	GET  /agentik/ai-sdk/chat/{id}/stream  the running answer again from its start, or the last one when it
//	                                       failed or was interrupted (204 when none)
//
// The chat's id is the conversation's id: the first request with a new id
// creates the conversation, and the same id reaches it from every other
// surface. Only the last message of a request is new. A turn is the one
// assistant UI message it streams; its chunks are projected from the
// conversation's stored events (chunk.go), so a replay from the turn's
// first event is the same stream again: that is how useChat({resume:
// true}) gets the whole answer after a reload. A tool call that waits for
// approval ends the stream with a tool-approval-request, which the AI
// SDK's addToolApprovalResponse answers with the next request.
package aisdk

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// Prefix is where the routes live.
const Prefix = "/agentik/ai-sdk/"

// StreamHeader is the header by which the AI SDK knows a UI message stream.
const StreamHeader = "x-vercel-ai-ui-message-stream"

// Config holds what the handler needs.
type Config struct {
	Runner *agent.Runner
	// Conversations reads the conversations and their history (the
	// caller's permission, agent/conversations.go).
	Conversations *agent.Conversations
	Broker        *broker.Broker
	// Streams ends the streams on shutdown and waits for them; nil: a
	// group of the handler's own.
	Streams *sse.Group
	// Heartbeat is how often an idle stream gets a comment line.
	Heartbeat time.Duration
	// StopGrace is how long a turn goes on after its stream's client left
	// (useChat's Stop aborts the request; so does a reload) before it
	// stops, unless the client resumes it; 0: relay.DefaultStopGrace.
	StopGrace time.Duration
	Logger    *slog.Logger
}

// Handler serves the AI SDK routes (Routes).
type Handler struct {
	cfg   Config
	stops *relay.Stops
}

// New makes a Handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Streams == nil {
		cfg.Streams = sse.NewGroup()
	}
	return &Handler{cfg: cfg, stops: relay.NewStops(cfg.StopGrace, cfg.Streams, cfg.Runner, cfg.Conversations)}
}

// Routes is the URL surface: pattern → handler, for the server's mux
// (behind its middleware).
func (h *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /agentik/ai-sdk/chat":            http.HandlerFunc(h.handleChat),
		"GET /agentik/ai-sdk/chat/{id}/stream": http.HandlerFunc(h.handleStream),
		Prefix:                                 http.HandlerFunc(h.handleNoRoute),
	}
}

func (h *Handler) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, agent.Errorf(agent.CodeNotFound, "no route %s %s; the AI SDK routes are POST /agentik/ai-sdk/chat and GET /agentik/ai-sdk/chat/{id}/stream", r.Method, r.URL.Path))
}

// messageID is the id of the assistant UI message of the turn whose first
// event has seq: the same for the first stream and every replay.
func messageID(turnSeq int64) string { return "turn-" + strconv.FormatInt(turnSeq, 10) }

func (h *Handler) handleChat(w http.ResponseWriter, r *http.Request) {
	req, err := decode(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	r.Body.Close() // read: the body's timeout must not end the stream
	switch {
	case len(req.approvals) > 0:
		h.approve(w, r, req)
	case req.trigger == triggerRegenerate:
		if _, err := h.cfg.Conversations.Get(ctx, req.id); err != nil {
			h.fail(w, r, err)
			return
		}
		if err := h.stops.Take(ctx, req.id, ""); err != nil {
			h.fail(w, r, err)
			return
		}
		answer, err := h.answerOf(ctx, req.id, req.userID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		res, err := h.cfg.Runner.Regenerate(ctx, req.id, answer)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.replay(w, r, req.id, res.Seq, "")
	default:
		if err := agent.CheckExternalID("id", req.id); err != nil {
			h.fail(w, r, err)
			return
		}
		// A chat of the caller's own whose run its client aborted stops
		// first; another's id answers not_found here, before anything.
		if _, err := h.cfg.Conversations.Get(ctx, req.id); err == nil {
			if err := h.stops.Take(ctx, req.id, req.userID); err != nil {
				h.fail(w, r, err)
				return
			}
		} else if !errors.Is(err, agent.ErrNotFound) {
			h.fail(w, r, err)
			return
		}
		// The chat id names the conversation: made with the first message,
		// or nothing at all when that is refused.
		res, err := h.cfg.Runner.Start(ctx, agent.StartInput{ConversationID: req.id, New: &agent.NewConversation{Open: true}, Content: req.content, ClientID: req.userID})
		if err != nil {
			h.fail(w, r, err)
			return
		}
		// A duplicate (the same message sent again) streams that turn.
		h.replay(w, r, req.id, res.Seq, req.userID)
	}
}

// replay streams the turn whose first event has seq (started by the
// message whose client id is key) from its start.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, id string, seq int64, key string) {
	sub, err := relay.Conversation(r.Context(), h.cfg.Broker, id, seq-1)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.follow(w, r, id, seq, key, sub, newProjection(messageID(seq)))
}

// answerOf is the assistant message that answered the user message a
// regenerate names by its UI id (the client_id it was sent with, or its
// agentik id); "" for the last answer.
func (h *Handler) answerOf(ctx context.Context, id, userID string) (string, error) {
	var found bool
	for off := 0; ; off += agent.MaxPageSize {
		ms, err := h.cfg.Conversations.Messages(ctx, agent.MessageQuery{ConversationID: id, Offset: off, Limit: agent.MaxPageSize})
		if err != nil {
			return "", err
		}
		for _, m := range ms {
			switch {
			case m.Type == agent.MessageUser && (m.ClientID == userID || m.ID == userID):
				found = true
			case m.Type == agent.MessageUser:
				found = false
			case found && m.Type == agent.MessageAssistant:
				return m.ID, nil
			}
		}
		if len(ms) < agent.MaxPageSize {
			break
		}
	}
	if found {
		return "", agent.Errorf(agent.CodeBadRequest, "user message %s has no answer to regenerate yet", agent.Shorten(userID, 140))
	}
	return "", agent.Errorf(agent.CodeNotFound, "conversation %s has no user message %s to answer again", id, agent.Shorten(userID, 140))
}

// approve decides the waiting tool calls the request answers, then streams
// the rest of the turn as the continuation of the message that asked.
func (h *Handler) approve(w http.ResponseWriter, r *http.Request, req chatRequest) {
	ctx := r.Context()
	c, err := h.cfg.Conversations.Get(ctx, req.id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// Live from now: what follows the decisions is what the client lacks.
	sub, err := relay.Conversation(ctx, h.cfg.Broker, c.ID, -1)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, a := range req.approvals {
		err := h.cfg.Runner.Approve(ctx, c.ID, a)
		if errors.Is(err, agent.ErrConflict) {
			continue // decided elsewhere first (the UI, another tab): that decision stands, the stream shows what follows
		}
		if err != nil {
			sub.Close()
			h.fail(w, r, err)
			return
		}
	}
	p := newProjection(req.messageID)
	if c, err = h.cfg.Conversations.Get(ctx, c.ID); err == nil && !c.Running {
		// Nothing runs any more (it ended before the decisions arrived).
		sub.Close()
		h.finished(w, r, p, p.finish(nil, "stop", nil)...)
		return
	}
	h.follow(w, r, c.ID, c.TurnSeq, "", sub, p)
}

func (h *Handler) handleStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, err := h.cfg.Conversations.Get(r.Context(), id)
	if errors.Is(err, agent.ErrNotFound) {
		// A new chat (useChat resumes on mount, before its first message),
		// or one the caller may not see: nothing of theirs runs there.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if c.Running && c.TurnSeq > 0 {
		h.replay(w, r, c.ID, c.TurnSeq, "")
		return
	}
	// Nothing runs. A last turn that failed or was interrupted (its
	// process died and it was not continued, say) is streamed again to
	// its end, with its error: a client that lost the stream learns how
	// the turn ended. One that ended well has nothing to resume.
	lt, err := h.cfg.Runner.LastTurn(r.Context(), c.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !lt.Failed() || lt.Seq == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sub, err := relay.Conversation(r.Context(), h.cfg.Broker, c.ID, lt.Seq-1)
	var re *broker.ResyncError
	if errors.As(err, &re) {
		// Its events are pruned (AGENTIK_EVENT_TTL): its end alone.
		p := newProjection(messageID(lt.Seq))
		reason, end := "interrupted", []chunk(nil)
		if lt.Error != nil {
			reason, end = "error", []chunk{{Type: "error", ErrorText: lt.Error.Message}}
		}
		h.finished(w, r, p, append(end, p.finish(nil, reason, nil)...)...)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.follow(w, r, c.ID, lt.Seq, "", sub, newProjection(messageID(lt.Seq)))
}

// finished answers with a message that has nothing more than end.
func (h *Handler) finished(w http.ResponseWriter, r *http.Request, p *projection, end ...chunk) {
	if !h.cfg.Streams.Hold() {
		h.fail(w, r, agent.Errorf(agent.CodeUnavailable, "the server is shutting down; reconnect in a moment"))
		return
	}
	defer h.cfg.Streams.Release()
	w.Header().Set(StreamHeader, "v1")
	sw := sse.Start(w)
	writeChunks(sw, p.start())
	writeChunks(sw, end...)
	sw.Data([]byte("[DONE]"))
	_ = sw.Flush()
}

// follow streams sub through p until the turn (whose first event has
// turnSeq, started by the message key) ends or parks, the client leaves,
// or the server shuts down. A client that leaves mid-turn stops it after
// the stop grace (useChat's Stop is the request's abort), unless a
// stream of it is read again by then (GET …/stream: a reload).
func (h *Handler) follow(w http.ResponseWriter, r *http.Request, id string, turnSeq int64, key string, sub *relay.Sub, p *projection) {
	defer sub.Close()
	if !h.cfg.Streams.Hold() {
		h.fail(w, r, agent.Errorf(agent.CodeUnavailable, "the server is shutting down; reconnect in a moment"))
		return
	}
	defer h.cfg.Streams.Release()
	w.Header().Set(StreamHeader, "v1")
	sw := sse.Start(w)
	writeChunks(sw, p.start())
	behind := relay.Frames([]chunk{{Type: "error", ErrorText: "the stream fell behind the answer; resume it (GET " + Prefix + "chat/" + id + "/stream)"}})
	reading := h.stops.Reading(id) // a reload's resume keeps the turn going
	err := relay.Follow{Sink: relay.SSE(sw), Heartbeat: h.cfg.Heartbeat, Closing: h.cfg.Streams.Closing(),
		Cut:  func(error) []relay.Frame { return behind },
		Last: []relay.Frame{relay.Data([]byte("[DONE]"))},
		Waiting: func(ctx context.Context) ([]string, error) {
			c, err := h.cfg.Conversations.Get(ctx, id)
			return c.Waiting, err
		}}.Run(r.Context(), sub, frames(p))
	if errors.Is(err, relay.ErrLeft) && !p.done { // before reading ends: a Take waiting for the stream's end finds the leave
		h.stops.Left(r.Context(), id, turnSeq, key)
	}
	reading()
}

// frames is the projection as the relay feeds it.
func frames(p *projection) relay.Parts[chunk] {
	return relay.Parts[chunk]{On: p.on, Done: func() bool { return p.done }, Ask: func() bool { return len(p.asked) > 0 }, Park: p.parked}
}

// writeChunks queues chunks as data frames.
func writeChunks(sw *sse.Writer, cs ...chunk) {
	for _, f := range relay.Frames(cs) {
		sw.Data(f.Data)
	}
}

// fail answers err as agentik's Error JSON ({"code","message"}) with its
// status; the AI SDK shows the body as the error's message.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *agent.Error
	var re *broker.ResyncError
	switch {
	case errors.As(err, &re):
		e = agent.Errorf(agent.CodeUnavailable, "the answer's events are no longer retained (%s); reload the chat", re.Reason)
	case !errors.As(err, &e) || e.Code == agent.CodeInternal:
		h.cfg.Logger.Error("internal_error", "op", r.Method+" "+r.URL.Path, "err", err)
		e = agent.Errorf(agent.CodeInternal, "internal error; the server log has the details")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(protocol.HTTPStatus(e.Code))
	_ = json.NewEncoder(w).Encode(e)
}
