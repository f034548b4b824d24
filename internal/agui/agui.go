// Package agui serves AG-UI (DESIGN §11.7), the protocol of agent front
// ends such as CopilotKit: `POST /agentik/ag-ui` takes a RunAgentInput and
// streams the run's events over SSE.
//
// The threadId is the conversation's id (created when new); a run is a
// turn, and its runId is echoed. The last message, when it is the user's,
// is the run's new message (its id is the send's client_id, so the same
// input posted again replays that turn instead of sending twice); a run
// without one replays the running turn from its start, or, when nothing
// runs, just syncs the thread (RUN_STARTED, MESSAGES_SNAPSHOT,
// RUN_FINISHED). Every run starts with a MESSAGES_SNAPSHOT of what the
// thread held before it. A tool call that waits for approval ends the run
// with an interrupt outcome (one interrupt per waiting call, its id the
// call id); the next run answers it through resume, with the payload
// {approved, editedArgs?, reason?}. Bad input is a RUN_ERROR carrying
// agentik's error code, and stores nothing.
package agui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// Path is the route.
const Path = "/agentik/ag-ui"

// Config holds what the handler needs.
type Config struct {
	Runner *agent.Runner
	// Conversations reads the conversations and their history (the
	// caller's permission, agent/conversations.go).
	Conversations *agent.Conversations
	Broker        *broker.Broker
	Streams       *sse.Group    // ends the streams on shutdown; nil: a group of the handler's own
	Heartbeat     time.Duration // how often an idle stream gets a comment line
	// StopGrace is how long a turn goes on after its run's client left
	// (HttpAgent's abortRun aborts the request) before it stops, unless a
	// run without input reads it again; 0: relay.DefaultStopGrace.
	StopGrace time.Duration
	Logger    *slog.Logger
}

// Handler serves AG-UI runs (Routes).
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
		"POST " + Path: http.HandlerFunc(h.handleRun),
		Path:           http.HandlerFunc(h.handleNoRoute),
	}
}

func (h *Handler) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "POST")
	h.fail(w, r, run{}, agent.Errorf(agent.CodeNotFound, "no route %s %s; AG-UI runs are POST %s", r.Method, r.URL.Path, Path))
}

func (h *Handler) handleRun(w http.ResponseWriter, r *http.Request) {
	rn, err := decode(r)
	r.Body.Close() // read: the body's timeout must not end the stream
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	switch {
	case len(rn.resume) > 0:
		h.resume(w, r, rn)
	case rn.content != nil:
		h.send(w, r, rn)
	default:
		h.attach(w, r, rn)
	}
}

// send starts a turn with the run's new message and streams it.
func (h *Handler) send(w http.ResponseWriter, r *http.Request, rn run) {
	ctx := r.Context()
	if err := agent.CheckExternalID("threadId", rn.threadID); err != nil {
		h.fail(w, r, rn, err)
		return
	}
	// A thread of the caller's own whose run its client aborted stops
	// first; another's id answers not_found here, before anything.
	if _, err := h.cfg.Conversations.Get(ctx, rn.threadID); err == nil {
		if err := h.stops.Take(ctx, rn.threadID, rn.userID); err != nil {
			h.fail(w, r, rn, err)
			return
		}
	} else if !errors.Is(err, agent.ErrNotFound) {
		h.fail(w, r, rn, err)
		return
	}
	// The thread id names the conversation: made with the first message,
	// or nothing at all when that is refused.
	res, err := h.cfg.Runner.Start(ctx, agent.StartInput{ConversationID: rn.threadID, New: &agent.NewConversation{Open: true}, Content: rn.content, ClientID: rn.userID})
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	h.replay(w, r, rn, res.Seq, rn.userID)
}

// replay streams the turn whose first event has seq from its start, after
// a snapshot of the thread up to that event (the turn's user message, which
// the client has already, included: a snapshot is all the thread holds).
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, rn run, seq int64, key string) {
	ms, err := h.messages(r.Context(), rn.threadID, seq)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	sub, err := relay.Conversation(r.Context(), h.cfg.Broker, rn.threadID, seq-1)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	snap, user, texts := snapshot(ms)
	h.follow(w, r, seq, key, sub, snap, newProjection(rn.threadID, rn.runID, user, texts))
}

// attach answers a run without new input: the running turn again from its
// start, else the thread as it is.
func (h *Handler) attach(w http.ResponseWriter, r *http.Request, rn run) {
	c, err := h.cfg.Conversations.Get(r.Context(), rn.threadID)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	if c.Running && c.TurnSeq > 0 {
		h.replay(w, r, rn, c.TurnSeq, "")
		return
	}
	ms, err := h.messages(r.Context(), c.ID, 0)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	// The run ends as the thread's last turn did: one that failed (its
	// process died and it was not continued, say) is a RUN_ERROR again,
	// one that was interrupted is cancelled.
	lt, err := h.cfg.Runner.LastTurn(r.Context(), c.ID)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	end := event{Type: runFinished, ThreadID: rn.threadID, RunID: rn.runID, Outcome: &outcome{Type: "success"}}
	switch {
	case lt.Error != nil:
		end = event{Type: runError, Message: lt.Error.Message, Code: lt.Error.Code}
	case lt.Interrupted:
		end.Outcome.Type = "cancelled"
	}
	snap, _, _ := snapshot(ms)
	p := newProjection(rn.threadID, rn.runID, "", 0)
	h.write(w, r, func(sw *sse.Writer) {
		writeEvents(sw, p.started(), event{Type: messagesSnapshot, Messages: &snap}, end)
	})
}

// resume answers the open interrupts of the thread's waiting turn and
// streams the rest of it.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, rn run) {
	ctx := r.Context()
	c, err := h.cfg.Conversations.Get(ctx, rn.threadID)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	if len(c.Waiting) == 0 {
		// Answered already (a resume posted again): the run goes on, or is over.
		h.attach(w, r, rn)
		return
	}
	open := map[string]bool{}
	for _, id := range c.Waiting {
		open[id] = true
	}
	var decisions []agent.ApprovalInput
	for i, e := range rn.resume {
		if !open[e.InterruptID] {
			h.fail(w, r, rn, agent.Errorf(agent.CodeBadRequest, "resume[%d].interruptId %q is not an open interrupt of thread %s (open: %s)", i, agent.Shorten(e.InterruptID, 140), c.ID, strings.Join(c.Waiting, ", ")))
			return
		}
		delete(open, e.InterruptID)
		d, _ := decision(i, e) // checked by decode
		decisions = append(decisions, d)
	}
	if len(open) > 0 {
		var missing []string
		for _, id := range c.Waiting {
			if open[id] {
				missing = append(missing, id)
			}
		}
		h.fail(w, r, rn, agent.Errorf(agent.CodeBadRequest, "resume must answer every open interrupt of thread %s; missing: %s", c.ID, strings.Join(missing, ", ")))
		return
	}
	// What the client has: the thread so far. Then live from before the
	// decisions: the rest of the turn.
	ms, err := h.messages(ctx, c.ID, 0)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	sub, err := relay.Conversation(ctx, h.cfg.Broker, c.ID, -1)
	if err != nil {
		h.fail(w, r, rn, err)
		return
	}
	for _, d := range decisions {
		err := h.cfg.Runner.Approve(ctx, c.ID, d)
		if errors.Is(err, agent.ErrConflict) {
			continue // decided meanwhile elsewhere: that decision stands
		}
		if err != nil {
			sub.Close()
			h.fail(w, r, rn, err)
			return
		}
	}
	snap, user, texts := snapshot(ms)
	h.follow(w, r, c.TurnSeq, "", sub, snap, newProjection(rn.threadID, rn.runID, user, texts))
}

// messages is the active path of conversation id, up to the message whose
// event has seq upTo (0: all).
func (h *Handler) messages(ctx context.Context, id string, upTo int64) ([]agent.Message, error) {
	var out []agent.Message
	for off := 0; ; off += agent.MaxPageSize {
		ms, err := h.cfg.Conversations.Messages(ctx, agent.MessageQuery{ConversationID: id, Offset: off, Limit: agent.MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if upTo == 0 || m.Seq <= upTo {
				out = append(out, m)
			}
		}
		if len(ms) < agent.MaxPageSize {
			return out, nil
		}
	}
}

// write answers with an event stream that write fills.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, write func(*sse.Writer)) {
	if !h.cfg.Streams.Hold() {
		h.fail(w, r, run{}, agent.Errorf(agent.CodeUnavailable, "the server is shutting down; run again in a moment"))
		return
	}
	defer h.cfg.Streams.Release()
	sw := sse.Start(w)
	write(sw)
	_ = sw.Flush()
}

// follow streams sub through p, after RUN_STARTED and the snapshot, until
// the run (the turn whose first event has turnSeq, started by the message
// key) finishes, errs or parks, the client leaves, or the server shuts
// down. A client that leaves mid-run (abortRun) stops the turn after the
// stop grace, unless a run without input reads it again by then.
func (h *Handler) follow(w http.ResponseWriter, r *http.Request, turnSeq int64, key string, sub *relay.Sub, snap []message, p *projection) {
	defer sub.Close()
	h.write(w, r, func(sw *sse.Writer) {
		writeEvents(sw, p.started(), event{Type: messagesSnapshot, Messages: &snap})
		behind := relay.Frames([]event{{Type: runError, Code: agent.CodeUnavailable, Message: "the stream fell behind the run; run again without new input to replay it"}})
		reading := h.stops.Reading(p.threadID)
		err := relay.Follow{Sink: relay.SSE(sw), Heartbeat: h.cfg.Heartbeat, Closing: h.cfg.Streams.Closing(),
			Cut: func(error) []relay.Frame { return behind },
			Waiting: func(ctx context.Context) ([]string, error) {
				c, err := h.cfg.Conversations.Get(ctx, p.threadID)
				return c.Waiting, err
			}}.Run(r.Context(), sub, frames(p))
		if errors.Is(err, relay.ErrLeft) && !p.done { // before reading ends: a Take waiting for the stream's end finds the leave
			h.stops.Left(r.Context(), p.threadID, turnSeq, key)
		}
		reading()
	})
}

// frames is the projection as the relay feeds it.
func frames(p *projection) relay.Parts[event] {
	return relay.Parts[event]{On: p.on, Done: func() bool { return p.done }, Ask: func() bool { return len(p.asked) > 0 }, Park: p.parked}
}

// writeEvents queues events as data frames.
func writeEvents(sw *sse.Writer, evs ...event) {
	for _, f := range relay.Frames(evs) {
		sw.Data(f.Data)
	}
}

// fail answers err as a run that failed: an event stream holding one
// RUN_ERROR with agentik's error code, which AG-UI clients read as the
// run's error.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, rn run, err error) {
	var e *agent.Error
	var re *broker.ResyncError
	switch {
	case errors.As(err, &re):
		e = agent.Errorf(agent.CodeUnavailable, "the run's events are no longer retained (%s); run again without new input", re.Reason)
	case !errors.As(err, &e) || e.Code == agent.CodeInternal:
		h.cfg.Logger.Error("internal_error", "op", r.Method+" "+r.URL.Path, "err", err)
		e = agent.Errorf(agent.CodeInternal, "internal error; the server log has the details")
	}
	sw := sse.Start(w)
	writeEvents(sw, event{Type: runError, Message: e.Message, Code: e.Code})
	_ = sw.Flush()
}
