package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// The Responses API (DESIGN §11.4): POST /v1/responses, streamed or not,
// in the background or not; GET, cancel, DELETE and input_items of a
// stored response. A response with store (the default) is a turn of a
// stored conversation, live for every other client; store: false runs in
// a temp conversation, deleted when the request ends. previous_response_id
// continues the conversation of that response after it: from an earlier
// response than the latest, as a branch. Every stored response's stream
// is computed from the log (responses_project.go), so GET …?stream=true
// resumes any of them, after a drop or a restart, with starting_after.

// ResponseStore keeps the response ids: the database implements it.
type ResponseStore interface {
	PutResponse(ctx context.Context, r agent.StoredResponse) error
	Response(ctx context.Context, id string) (agent.StoredResponse, error)
	DeleteResponse(ctx context.Context, id string) error
}

// maxResponseBody bounds a POST /v1/responses body read here (the server's
// body limit applies first).
const maxResponseBody = 32 << 20

// segment is what a replay of a response found.
type segment struct {
	p    *projector
	sr   agent.StoredResponse
	conv agent.Conversation // the caller may see it
	// events are the stream events replayed (a GET that streams writes
	// them first); nil unless kept.
	events    []StreamEvent
	calls     map[string]bool           // call ids of its function_call items
	approvals map[string]agent.ToolCall // the calls of its mcp_approval_request items, by call id
}

func (h *Handler) responsesOff(w http.ResponseWriter, r *http.Request) bool {
	if h.cfg.Responses == nil {
		h.WriteError(w, r, agent.Errorf(agent.CodeUnavailable, "this server keeps no responses (no store)"))
		return true
	}
	return false
}

// stored loads a stored response the caller may see (its conversation is
// checked by the runner) with its echo. param names the field that gave
// the id, for the error.
func (h *Handler) stored(ctx context.Context, id, param string) (agent.StoredResponse, Echo, agent.Conversation, error) {
	var e Echo
	sr, err := h.cfg.Responses.Response(ctx, id)
	if err == nil {
		var c agent.Conversation
		if c, err = h.convs.Get(ctx, sr.ConversationID); err == nil {
			if err = json.Unmarshal(sr.Request, &e); err != nil {
				return sr, e, c, fmt.Errorf("response %s: %w", id, err)
			}
			return sr, e, c, nil
		}
	}
	if errors.Is(err, agent.ErrNotFound) {
		err = agent.Errorf(agent.CodeNotFound, "response %q not found", agent.Shorten(id, 80))
		if param != "" {
			err = &paramError{param: param, err: err.(*agent.Error)}
		}
	}
	return agent.StoredResponse{}, e, agent.Conversation{}, err
}

// subscribe follows a conversation's events after seq after (-1: live
// only, a temp conversation).
func (h *Handler) subscribe(ctx context.Context, convID string, after int64) (*relay.Sub, error) {
	sub, err := relay.Conversation(ctx, h.broker, convID, after)
	var rs *broker.ResyncError
	if errors.As(err, &rs) && rs.Reason == broker.ReasonPruned {
		return nil, agent.Errorf(agent.CodeNotFound, "the events of this response were pruned (older than the event log keeps, AGENTIK_EVENT_TTL)")
	}
	return sub, err
}

// followResponse follows a response's events from sub into p (through
// fo, which says where its frames go and how long to follow), until the
// response ended, or parked on approvals; with fo.UntilCaughtUp it
// returns as soon as the stored events are exhausted. A subscription
// that fell behind resumes from its last event. frames (when not nil)
// makes the frames of the stream events each event makes. It ends early
// with the client (relay.ErrLeft), on shutdown, or when the subscription
// fails.
func (h *Handler) followResponse(ctx context.Context, sub *relay.Sub, convID string, p *projector, fo relay.Follow, frames func([]StreamEvent) []relay.Frame) error {
	if p.done {
		return nil
	}
	fo.Closing, fo.Resume = h.closing, true
	fo.Waiting = func(ctx context.Context) ([]string, error) {
		// The approval requests are written in one batch with the
		// conversation's waiting state: it tells whether the turn parked
		// on them.
		c, err := h.convs.Get(ctx, convID)
		if err != nil || !c.Running {
			return nil, err
		}
		return c.Waiting, nil
	}
	rf := &responseFrames{p: p, frames: frames}
	err := fo.Run(ctx, sub, rf)
	if rf.deleted {
		return agent.Errorf(agent.CodeNotFound, "the conversation of this response was deleted")
	}
	return err
}

// responseFrames is a response's projection: its events fold into p.
type responseFrames struct {
	p       *projector
	frames  func([]StreamEvent) []relay.Frame
	deleted bool // the response's conversation was deleted
}

func (f *responseFrames) Event(e *agent.Encoded) ([]relay.Frame, bool) {
	if e.Kind == agent.KindAgent && e.Type == agent.AgentDeleted {
		f.deleted = true
		return nil, true
	}
	if e.Kind != agent.KindConversation {
		return nil, false
	}
	all, err := relay.Decode(e) // re-shaped for the Responses API: decoded to decide
	if err != nil || all.Event == nil {
		return nil, false
	}
	return f.out(f.p.on(&all)), f.p.done
}

func (f *responseFrames) Asking() bool { return f.p.waiting }

func (f *responseFrames) Parked(waiting []string) ([]relay.Frame, bool) {
	if len(waiting) == 0 {
		return nil, false
	}
	return f.out(f.p.parked()), true
}

func (f *responseFrames) out(evs []StreamEvent) []relay.Frame {
	if f.frames == nil || len(evs) == 0 {
		return nil
	}
	return f.frames(evs)
}

// replay computes a stored response from the log as it is now; with keep,
// its stream events are kept too. The subscription is returned open, to
// go on live; the caller closes it.
func (h *Handler) replay(ctx context.Context, sr agent.StoredResponse, e Echo, keep bool) (*segment, *relay.Sub, error) {
	seg := &segment{p: newProjector(sr.ID, sr.ConversationID, false, sr.CreatedAt, e), calls: map[string]bool{}, approvals: map[string]agent.ToolCall{}}
	sub, err := h.subscribe(ctx, sr.ConversationID, sr.After)
	if err != nil {
		return nil, nil, err
	}
	start := seg.p.start()
	if keep {
		seg.events = start
	}
	err = h.followResponse(ctx, sub, sr.ConversationID, seg.p, relay.Follow{UntilCaughtUp: true}, func(evs []StreamEvent) []relay.Frame {
		if keep {
			seg.events = append(seg.events, evs...)
		}
		return nil
	})
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	for _, it := range seg.p.resp.Output {
		switch it.Type {
		case itemFunctionCall:
			seg.calls[it.CallID] = true
		case itemMCPApprovalReq:
			id := strings.TrimPrefix(it.ID, prefixApproval)
			c := seg.p.calls[id]
			seg.approvals[id] = agent.ToolCall{ID: id, Name: c.Name, Arguments: c.Arguments}
		}
	}
	return seg, sub, nil
}

// load is the stored response id (param names the request field that
// gave it, for the error) computed from the log as it is now, with its
// subscription open (see replay); the caller closes it.
func (h *Handler) load(ctx context.Context, id, param string, keep bool) (*segment, *relay.Sub, error) {
	sr, e, c, err := h.stored(ctx, id, param)
	if err != nil {
		return nil, nil, err
	}
	seg, sub, err := h.replay(ctx, sr, e, keep)
	if err != nil {
		return nil, nil, err
	}
	seg.sr, seg.conv = sr, c
	return seg, sub, nil
}

// handleCreateResponse is POST /v1/responses.
func (h *Handler) handleCreateResponse(w http.ResponseWriter, r *http.Request) {
	if !h.runner.ModelConfigured() {
		h.WriteError(w, r, agent.Errorf(agent.CodeUnavailable, "no model is configured on this agentik server"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxResponseBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.WriteError(w, r, agent.Errorf(agent.CodeTooLarge, "the body is larger than this server accepts"))
			return
		}
		h.WriteError(w, r, agent.Errorf(agent.CodeBadRequest, "read body: %v", err))
		return
	}
	c, err := h.parseResponse(r.Context(), body)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	if c.store && h.responsesOff(w, r) {
		return
	}
	ctx := r.Context()
	run, err := h.startResponse(ctx, &c)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	defer run.sub.Close()
	if run.temp {
		// A stateless response goes with its only client.
		defer func() { _ = h.runner.Delete(context.WithoutCancel(ctx), run.convID) }()
	}
	p := run.p
	switch {
	case c.stream:
		h.streamResponse(w, r, run.sub, run.convID, p, p.start(), -1)
	case c.background:
		writeJSON(w, http.StatusOK, p.snapshot())
	default:
		if err := h.followResponse(ctx, run.sub, run.convID, p, relay.Follow{}, nil); err != nil {
			if !errors.Is(err, relay.ErrLeft) {
				h.log.Warn("response_cut", "err", err)
				h.WriteError(w, r, agent.Errorf(agent.CodeUnavailable, "the server stopped following the response (shutting down or overloaded); GET /v1/responses/%s reads it", p.resp.ID))
			}
			return
		}
		writeJSON(w, http.StatusOK, p.snapshot())
	}
}

// started is a response whose turn runs.
type started struct {
	p      *projector
	sub    *relay.Sub
	convID string
	temp   bool
}

// startResponse checks the request against what it continues, then
// writes: the conversation (when new), its settings, the turn (or the
// approvals), the response's id. Nothing is written for a request refused.
func (h *Handler) startResponse(ctx context.Context, c *responseCall) (*started, error) {
	var (
		conv agent.Conversation
		prev *segment
		err  error
		leaf string
	)
	switch {
	case c.previous != "":
		seg, sub, err := h.load(ctx, c.previous, "previous_response_id", false)
		if err != nil {
			return nil, err
		}
		sub.Close()
		if !seg.p.done {
			return nil, &paramError{param: "previous_response_id", err: agent.Errorf(agent.CodeBusy, "response %s is still in progress; wait for it to end or cancel it", c.previous)}
		}
		conv, prev, leaf = seg.conv, seg, seg.p.lastMessage
	case c.conversation != "":
		if conv, err = h.convs.Get(ctx, c.conversation); err != nil {
			if errors.Is(err, agent.ErrNotFound) {
				return nil, &paramError{param: "conversation", err: agent.Errorf(agent.CodeNotFound, "conversation %q not found", agent.Shorten(c.conversation, 80))}
			}
			return nil, err
		}
		if conv.Temp {
			return nil, &paramError{param: "conversation", err: agent.Errorf(agent.CodeNotFound, "conversation %q not found", agent.Shorten(c.conversation, 80))}
		}
	}
	if err := h.checkContinued(ctx, c, conv, prev); err != nil {
		return nil, err
	}
	settings := h.settingsOf(c)
	in := c.input
	in.ResponseFormat, in.ToolChoice, in.After = c.format, c.toolChoice, leaf
	if conv.ID == "" {
		// A new conversation is made with the turn, or not at all when
		// that is refused.
		conv = agent.Conversation{ID: agent.NewID(), Temp: !c.store}
		in.New = &agent.NewConversation{Temp: !c.store, History: c.history, Settings: settings}
	} else if s, changed := changedSettings(conv, settings); changed {
		if _, err := h.convs.Update(ctx, conv.ID, s); err != nil {
			return nil, err
		}
	}
	in.ConversationID = conv.ID
	id := prefixResponse + agent.NewID()
	run := &started{convID: conv.ID, temp: conv.Temp}
	created := h.now()
	run.p = newProjector(id, conv.ID, conv.Temp, created, c.echo)
	if conv.Temp { // never stored: listen before the turn starts
		if run.sub, err = h.subscribe(ctx, conv.ID, -1); err != nil {
			return nil, err
		}
	}
	var after int64
	if len(c.approvals) > 0 {
		after = prev.p.last
		for _, a := range c.approvals {
			// Decided meanwhile (in the UI): the turn goes on all the same.
			if err := h.runner.Approve(ctx, conv.ID, a); err != nil && !errors.Is(err, agent.ErrConflict) {
				return nil, err
			}
		}
	} else {
		var res agent.SendResult
		if failed, ok := h.failedRetryOf(ctx, conv, leaf, in); ok && (c.previous != "" || c.conversation != "") {
			// A client's own retry (the AI SDK's) of a failed response:
			// that turn again, not a failed branch per attempt.
			res, err = h.runner.Regenerate(ctx, conv.ID, failed)
		} else {
			res, err = h.runner.Start(ctx, in)
		}
		if err != nil {
			if run.sub != nil {
				run.sub.Close()
			}
			return nil, err
		}
		after = res.Seq - 1
	}
	if !conv.Temp {
		req, _ := json.Marshal(c.echo)
		sr := agent.StoredResponse{ID: id, ConversationID: conv.ID, After: after, CreatedAt: created, Request: req}
		if err := h.cfg.Responses.PutResponse(context.WithoutCancel(ctx), sr); err != nil {
			return nil, err
		}
		if run.sub, err = h.subscribe(ctx, conv.ID, after); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// checkContinued checks new input against what it continues: every
// function_call_output answers a call of the previous response (or one
// the conversation waits on), every mcp_approval_response a request of
// the previous response, and all of them are answered.
func (h *Handler) checkContinued(ctx context.Context, c *responseCall, conv agent.Conversation, prev *segment) error {
	if conv.ID == "" {
		return nil
	}
	if len(c.input.Results) > 0 {
		open := map[string]bool{}
		if prev != nil {
			open = prev.calls
		} else {
			var err error
			if open, err = h.openCalls(ctx, conv); err != nil {
				return err
			}
		}
		for _, res := range c.input.Results {
			if !open[res.CallID] {
				f := c.outputs[res.CallID]
				return &paramError{param: f + ".call_id", err: agent.Errorf(agent.CodeBadRequest, "%s.call_id %q answers no function_call of the response it continues", f, agent.Shorten(res.CallID, 80))}
			}
		}
	}
	if len(c.approvals) > 0 {
		answered := map[string]bool{}
		for _, a := range c.approvals {
			if _, ok := prev.approvals[a.CallID]; !ok {
				f := c.outputs[a.CallID]
				return &paramError{param: f + ".approval_request_id", err: agent.Errorf(agent.CodeNotFound, "%s.approval_request_id %q is not an approval request of response %s", f, approvalItemID(a.CallID), c.previous)}
			}
			answered[a.CallID] = true
			if c.echo.Approved == nil {
				c.echo.Approved = map[string]agent.ToolCall{}
			}
			c.echo.Approved[a.CallID] = prev.approvals[a.CallID]
		}
		for id := range prev.approvals {
			if !answered[id] && slices.Contains(conv.Waiting, id) {
				return badParam("input", "answer every approval request of response %s in one request: %s is not answered", c.previous, approvalItemID(id))
			}
		}
	}
	return nil
}

// openCalls are the tool calls at the end of a conversation's active
// path that have no result yet: those a function_call_output may answer.
func (h *Handler) openCalls(ctx context.Context, conv agent.Conversation) (map[string]bool, error) {
	const tail = 200
	ms, err := h.convs.Messages(ctx, agent.MessageQuery{ConversationID: conv.ID, Offset: max(0, conv.MessageCount-tail), Limit: tail})
	if err != nil {
		return nil, err
	}
	open := map[string]bool{}
	for _, m := range ms {
		switch m.Type {
		case agent.MessageUser:
			clear(open)
		case agent.MessageToolCall:
			open[m.CallID] = true
		case agent.MessageToolResult:
			delete(open, m.CallID)
		}
	}
	return open, nil
}

// settingsOf are the conversation settings a request asks for.
func (h *Handler) settingsOf(c *responseCall) agent.Settings {
	var s agent.Settings
	m := h.providerModel(c.echo.Model)
	s.Model = &m
	if c.echo.Instructions != nil {
		s.SystemPrompt = c.echo.Instructions
	}
	p := agent.Params{Temperature: c.echo.Temperature, TopP: c.echo.TopP, MaxTokens: c.echo.MaxOutputTokens}
	if c.effort != "" {
		p.ReasoningEffort = &c.effort
	}
	if !c.parallel {
		p.ParallelToolCalls = ptr(false)
	}
	s.Params = &p
	return s
}

// changedSettings is the part of s that changes conversation c.
func changedSettings(c agent.Conversation, s agent.Settings) (agent.Settings, bool) {
	var out agent.Settings
	changed := false
	if s.Model != nil && *s.Model != c.Model {
		out.Model, changed = s.Model, true
	}
	if s.SystemPrompt != nil && *s.SystemPrompt != c.SystemPrompt {
		out.SystemPrompt, changed = s.SystemPrompt, true
	}
	cur, _ := json.Marshal(c.Params)
	if c.Params == nil {
		cur, _ = json.Marshal(agent.Params{})
	}
	next, _ := json.Marshal(s.Params)
	if string(cur) != string(next) {
		out.Params, changed = s.Params, true
	}
	return out, changed
}

// streamResponse answers with the response's stream: first the events
// given (those a replay found), after starting_after, then live ones
// until the response ends.
func (h *Handler) streamResponse(w http.ResponseWriter, r *http.Request, sub *relay.Sub, convID string, p *projector, first []StreamEvent, startingAfter int) {
	if !h.streams.Hold() {
		h.WriteError(w, r, sse.ErrShuttingDown)
		return
	}
	defer h.streams.Release()
	out := relay.SSE(sse.Start(w))
	frames := func(evs []StreamEvent) []relay.Frame {
		var fs []relay.Frame
		for _, ev := range evs {
			if ev.SequenceNumber <= startingAfter {
				continue
			}
			b, _ := json.Marshal(ev) // the stream's events always marshal
			fs = append(fs, relay.Frame{Event: ev.Type, Data: b})
		}
		return fs
	}
	for _, f := range frames(first) {
		out.Frame(f)
	}
	if out.Flush() != nil {
		return
	}
	err := h.followResponse(r.Context(), sub, convID, p, relay.Follow{Sink: out, Heartbeat: h.cfg.Heartbeat}, frames)
	if err != nil && !errors.Is(err, relay.ErrLeft) {
		h.log.Warn("response_stream_cut", "response_id", p.resp.ID, "err", err)
	}
}

// handleGetResponse is GET /v1/responses/{id}: the response as it is now,
// or with stream=true its stream, from after starting_after to its end.
func (h *Handler) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	if h.responsesOff(w, r) {
		return
	}
	q := r.URL.Query()
	// openai-go's Responses.GetStreaming sends stream in a JSON body of
	// its GET (the query keeps starting_after): both places are read.
	var body struct {
		Stream        *bool `json:"stream"`
		StartingAfter *int  `json:"starting_after"`
	}
	if r.ContentLength != 0 && r.Body != nil {
		if err := decodeBody(r, &body); err != nil {
			h.WriteError(w, r, err)
			return
		}
	}
	stream := false
	if body.Stream != nil {
		stream = *body.Stream
	}
	if v := q.Get("stream"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			h.WriteError(w, r, badParam("stream", "stream must be true or false, got %q", agent.Shorten(v, 40)))
			return
		}
		if body.Stream != nil && *body.Stream != b {
			h.WriteError(w, r, badParam("stream", "stream is %v in the query and %v in the body; send one, or the same in both", b, *body.Stream))
			return
		}
		stream = b
	}
	after := -1
	if v := q.Get("starting_after"); v != "" || body.StartingAfter != nil {
		if v == "" {
			v = strconv.Itoa(*body.StartingAfter)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.WriteError(w, r, badParam("starting_after", "starting_after must be a sequence number (0 or more), got %q", agent.Shorten(v, 40)))
			return
		}
		if !stream {
			h.WriteError(w, r, badParam("starting_after", "starting_after is only allowed with stream=true"))
			return
		}
		after = n
	}
	seg, sub, err := h.load(r.Context(), r.PathValue("id"), "", stream)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	defer sub.Close()
	if !stream {
		writeJSON(w, http.StatusOK, seg.p.snapshot())
		return
	}
	if after >= seg.p.seq {
		// Every event a client saw is in the log already: a number past
		// them was never sent.
		h.WriteError(w, r, badParam("starting_after", "starting_after %d is beyond the end of response %s: its last event so far is %d", after, seg.sr.ID, seg.p.seq-1))
		return
	}
	h.streamResponse(w, r, sub, seg.sr.ConversationID, seg.p, seg.events, after)
}

// handleCancelResponse is POST /v1/responses/{id}/cancel: it interrupts
// the response's turn and answers the response as it ended.
func (h *Handler) handleCancelResponse(w http.ResponseWriter, r *http.Request) {
	if h.responsesOff(w, r) {
		return
	}
	ctx := r.Context()
	seg, sub, err := h.load(ctx, r.PathValue("id"), "", false)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	defer sub.Close()
	c := seg.conv
	if !seg.p.done {
		if _, err := h.runner.Interrupt(ctx, c.ID); err != nil {
			h.WriteError(w, r, err)
			return
		}
		if err := h.followResponse(ctx, sub, c.ID, seg.p, relay.Follow{}, nil); err != nil {
			h.WriteError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, seg.p.snapshot())
}

// handleDeleteResponse is DELETE /v1/responses/{id}: the id is forgotten;
// the conversation keeps the turn (its history is append-only).
func (h *Handler) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {
	if h.responsesOff(w, r) {
		return
	}
	ctx := r.Context()
	sr, _, _, err := h.stored(ctx, r.PathValue("id"), "")
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	if err := h.cfg.Responses.DeleteResponse(ctx, sr.ID); err != nil {
		h.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": sr.ID, "object": "response.deleted", "deleted": true})
}

// handleInputItems is GET /v1/responses/{id}/input_items: the new input
// the response answered (its user message, function outputs, approvals).
func (h *Handler) handleInputItems(w http.ResponseWriter, r *http.Request) {
	if h.responsesOff(w, r) {
		return
	}
	order := r.URL.Query().Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		h.WriteError(w, r, badParam("order", "order must be asc or desc, got %q", agent.Shorten(order, 20)))
		return
	}
	seg, sub, err := h.load(r.Context(), r.PathValue("id"), "", false)
	if err != nil {
		h.WriteError(w, r, err)
		return
	}
	sub.Close()
	items := slices.Clone(seg.p.inputs)
	if order == "desc" {
		slices.Reverse(items)
	}
	writeJSON(w, http.StatusOK, itemList(items))
}

// itemList is a list of items in OpenAI's list shape.
func itemList(items []*Item) map[string]any {
	list := map[string]any{"object": "list", "data": items, "has_more": false, "first_id": nil, "last_id": nil}
	if items == nil {
		list["data"] = []*Item{}
	}
	if len(items) > 0 {
		list["first_id"], list["last_id"] = items[0].ID, items[len(items)-1].ID
	}
	return list
}

// providerModel is the conversation model of a request's model: a
// provider's model id, or "" for the default model (its name, or its id).
func (h *Handler) providerModel(model string) string {
	if strings.HasPrefix(model, agent.AgentModelPrefix) {
		return model // an agent's conversation: the runner reads agent/<slug> as the agent
	}
	ms, def := h.runner.Models()
	if model == def || !slices.ContainsFunc(ms, func(m agent.ModelInfo) bool { return m.ID == model }) {
		return ""
	}
	return model
}
