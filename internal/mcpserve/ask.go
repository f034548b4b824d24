package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
)

// errGone ends a call whose client left or whose server shuts down: the
// turn goes on (a stored conversation's turn is not stopped by a
// disconnect); nobody reads the answer.
var errGone = errors.New("the client left or the server is shutting down")

// errLong ends a call followed for its turnCall.after: it goes on as a
// task (tasks.go).
var errLong = errors.New("the turn runs long")

// ask is the handler of an agent's tool.
func (h *Handler) ask(slug string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ok, err := h.mayUse(ctx, slug)
		if err != nil {
			return nil, err
		}
		if !ok {
			return mcp.NewToolResultErrorf("no agent %q here", slug), nil
		}
		if req.Params.RequestState != "" {
			return h.retry(ctx, slug, req) // input.go
		}
		convID, res, bad, err := h.start(ctx, slug, req.GetArguments())
		if bad != nil || err != nil {
			return bad, err
		}
		return h.call(ctx, h.newCall(ctx, req, convID, res.Seq), res.MessageID)
	}
}

// start starts the turn a call of agent slug's tool with args asks for:
// in a new conversation, or the next turn of the one it names. bad is the
// tool's error result for bad input (nothing stored).
func (h *Handler) start(ctx context.Context, slug string, args map[string]any) (convID string, res agent.SendResult, bad *mcp.CallToolResult, err error) {
	msg, _ := args["message"].(string)
	if strings.TrimSpace(msg) == "" {
		return "", res, mcp.NewToolResultError(`"message" is required: a non-empty string, what to ask the agent`), nil
	}
	convID, _ = args["conversation_id"].(string)
	if v, set := args["conversation_id"]; set && v != nil && convID == "" {
		if _, isString := v.(string); !isString {
			return "", res, mcp.NewToolResultError(`"conversation_id" must be a string (from an earlier result's structuredContent)`), nil
		}
	}
	if !h.cfg.Runner.ModelConfigured() {
		return "", res, mcp.NewToolResultError("no model is configured on this agentik server"), nil
	}
	// Without a conversation_id the conversation is made with the
	// message, or not at all.
	start := agent.StartInput{ConversationID: convID, Content: []agent.Content{agent.Text(msg)}}
	if convID != "" {
		c, err := h.cfg.Conversations.Get(ctx, convID)
		if errors.Is(err, agent.ErrNotFound) {
			return "", res, mcp.NewToolResultErrorf("no conversation %q: omit conversation_id to start a new one", agent.Shorten(convID, 80)), nil
		} else if err != nil {
			return "", res, nil, err
		}
		if of := agentOf(c); of != slug {
			return "", res, mcp.NewToolResultErrorf("conversation %q is agent %s's: continue it with %s, or omit conversation_id to start one with %s", convID, of, toolName(of), toolName(slug)), nil
		}
	} else {
		start.New = &agent.NewConversation{Settings: agent.Settings{Agent: &slug}}
	}
	res, err = h.cfg.Runner.Start(ctx, start)
	if err != nil {
		var e *agent.Error
		if errors.As(err, &e) {
			return "", res, mcp.NewToolResultErrorf("%s: %s", e.Code, e.Message), nil
		}
		return "", res, nil, err
	}
	return res.ConversationID, res, nil, nil
}

// newCall is the turnCall of req following the turn of conversation
// convID that starts at turnSeq.
func (h *Handler) newCall(ctx context.Context, req mcp.CallToolRequest, convID string, turnSeq int64) *turnCall {
	t := &turnCall{h: h, ctx: ctx, convID: convID, turnSeq: turnSeq, rpcID: json.RawMessage(req.Header.Get(rpcIDHeader))}
	if req.Params.Meta != nil {
		t.token = req.Params.Meta.ProgressToken
	}
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		// 2026-07-28: no server-initiated requests; what waits for a
		// person is an input_required result (input.go), when the client
		// can elicit.
		t.modern = true
		t.mrtr = info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	return t
}

// call follows t's turn from its first event and returns the call's
// result: the answer, or input_required when the turn waits for what the
// client can give. While it runs, a notifications/cancelled naming the
// call interrupts the turn (cancel.go).
func (h *Handler) call(ctx context.Context, t *turnCall, answerID string) (*mcp.CallToolResult, error) {
	t.answerID = answerID
	sub, err := relay.Conversation(ctx, h.cfg.Broker, t.convID, t.turnSeq-1)
	var re *broker.ResyncError
	if errors.As(err, &re) {
		return mcp.NewToolResultErrorf("the turn's events are no longer retained (%s); read the conversation %s", re.Reason, t.convID), nil
	} else if err != nil {
		return nil, err
	}
	defer sub.Close()
	session := ""
	if s := server.ClientSessionFromContext(ctx); s != nil {
		session = s.SessionID()
	}
	end := h.calls.add(ctx, callKeys(agent.PrincipalFrom(ctx).UserID, session, t.rpcID), t.convID)
	err = t.follow(sub, relay.Follow{})
	end(errors.Is(err, errGone))
	if err != nil {
		return nil, err
	}
	t.flushed()
	if t.inputNeeded {
		return t.inputRequired(), nil
	}
	return t.result(), nil
}

// agentOf is the slug of c's agent (a conversation made before agents is
// the default agent's).
func agentOf(c agent.Conversation) string {
	if c.Agent == "" {
		return agent.DefaultAgent
	}
	return c.Agent
}

// turnCall follows one turn for one tool call: the call as it came, or
// a reconnect that resumes it (resume.go).
type turnCall struct {
	h        *Handler
	ctx      context.Context
	convID   string
	answerID string
	turnSeq  int64           // the turn's first event, where a resume replays from
	rpcID    json.RawMessage // the call's JSON-RPC id ("" unknown)
	token    mcp.ProgressToken
	// seq is the event being read; a resumed call sent the progress of
	// the events up to sent already.
	seq, sent int64
	// out makes the frame of a progress notification's params on a
	// resumed call's stream; nil: the session's (mcp-go).
	out func(params map[string]any) relay.Frame
	// primed: a progress notification, and so a resume token, went out.
	primed atomic.Bool
	// modern: a 2026-07-28 request (no server-initiated requests); mrtr:
	// its client elicits, so what the turn waits for is asked of it as an
	// input_required result (input.go).
	modern, mrtr bool
	live         bool                 // the replay is over: events are live
	draining     bool                 // a request for input came live: read what is there, then ask (Parked)
	frames       []relay.Frame        // the progress frames of the event being read (a resumed call's)
	waits        map[string]inputWait // what waits for a person, by inbox item id
	skip         map[string]bool      // items the client cancelled: left to other surfaces
	inputNeeded  bool                 // follow returned to ask for input

	// A task's follow (tasks.go): detached, the end of ctx stops the
	// reading, never the turn; snapshot, it returns once the stored
	// events are read; after, it returns errLong when the turn goes on
	// that long.
	detached, snapshot bool
	after              time.Duration
	ended              bool      // the turn's end was read
	firstSeq           int64     // the first event read, and whether it is a user message
	firstUser          bool      //
	created, updated   time.Time // the dates of the first and the last event read

	text        strings.Builder
	reasoning   bool
	toolsRan    bool
	errMsg      string
	interrupted bool
	progress    float64
	pushed      int // progress notifications handed to mcp-go
}

// follow reads the turn's events until its end. A cancellation (the call's
// context ends while its HTTP request's does not) interrupts the turn and
// follows it to its end; a client that left ends the call, not the turn
// (on 2026-07-28, where nothing resumes, it is a cancellation too).
func (t *turnCall) follow(sub *relay.Sub, fo relay.Follow) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.ctx))
	defer cancel()
	httpCtx, _ := t.ctx.Value(requestKey{}).(context.Context)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { // the cancellation and shutdown watch
		defer close(watched)
		select {
		case <-t.ctx.Done():
			if t.detached {
				cancel()
				return
			}
			if httpCtx != nil && httpCtx.Err() == nil {
				// notifications/cancelled: stop is a command.
				if _, err := t.h.cfg.Runner.Interrupt(context.WithoutCancel(t.ctx), t.convID); err != nil {
					t.h.log.Warn("mcp_interrupt_failed", "conversation_id", t.convID, "err", err)
				}
				return
			}
			if t.modern && !closing(t.h.cfg.Streams.Closing()) {
				// 2026-07-28 resumes nothing: a client ends the call by
				// ending its stream (mcp-go's client sends nothing else),
				// so that is a cancellation too.
				t.h.log.Info("mcp_call_cancelled", "conversation_id", t.convID, "by", "stream_closed")
				if _, err := t.h.cfg.Runner.Interrupt(context.WithoutCancel(t.ctx), t.convID); err != nil {
					t.h.log.Warn("mcp_interrupt_failed", "conversation_id", t.convID, "err", err)
				}
			}
			cancel()
		case <-t.h.cfg.Streams.Closing():
			// A client that holds a resume token reconnects and the call
			// goes on where the turn does (resume.go): its stream ends
			// without a result.
			if abort, ok := t.ctx.Value(abortKey{}).(context.CancelFunc); ok && t.primed.Load() {
				abort()
			}
			cancel()
		case <-stop:
		}
	}()
	defer func() { close(stop); <-watched }()
	next := ctx
	if t.after > 0 {
		var stop context.CancelFunc
		next, stop = context.WithTimeout(ctx, t.after)
		defer stop()
	}
	fo.UntilCaughtUp = t.snapshot
	t.draining = false
	err := fo.Run(next, sub, t)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return errGone
	case next.Err() != nil:
		return errLong
	case errors.Is(err, relay.ErrLeft): // a resumed call's stream broke
		return errGone
	}
	return err
}

// CaughtUp: the stored events are read; what follows is live. A call
// that waits for the client's input asks for it once the events already
// there are read.
func (t *turnCall) CaughtUp() {
	if t.snapshot {
		return
	}
	t.live = true
	t.draining = t.askable()
}

// Asking reports whether a request for input came live: the events
// already there (the other requests of its round) are read, then the
// call returns input_required (Parked).
func (t *turnCall) Asking() bool { return t.draining }

// Parked ends the follow, to ask for input, if the call still waits for
// what the client can give.
func (t *turnCall) Parked([]string) ([]relay.Frame, bool) {
	if t.askable() {
		t.inputNeeded = true
		return nil, true
	}
	t.draining = false
	return nil, false
}

// Event reads one event of the turn: the progress notifications it makes
// (frames on a resumed call's stream, else sent through mcp-go), and
// whether the turn ended.
func (t *turnCall) Event(e *agent.Encoded) ([]relay.Frame, bool) {
	done := t.event(e)
	fs := t.frames
	t.frames = nil
	return fs, done
}

// event reads one event; true at the turn's end.
func (t *turnCall) event(e *agent.Encoded) bool {
	t.seq = e.Seq
	if t.firstSeq == 0 {
		t.firstSeq = e.Seq
		if first, err := relay.Decode(e); err == nil {
			t.created, t.updated = first.Date, first.Date
			t.firstUser = first.Event != nil && first.Event.Type == agent.EventMessage && first.Event.Message != nil && first.Event.Message.Type == agent.MessageUser
		}
	}
	// A message event matters for the answer's id only: read by a
	// scan, since the turn's answer holds its whole text.
	if typ, id, ok := relay.Message(e); ok {
		if typ == agent.MessageAssistant {
			t.answerID = id
		}
		return false
	}
	all, err := relay.Decode(e)
	if err != nil {
		return false
	}
	t.updated = all.Date
	if all.Agent != nil && all.Agent.Type == agent.AgentDeleted {
		t.errMsg = "the conversation was deleted"
		t.ended = true
		return true
	}
	ev := all.Event
	if ev == nil {
		return false
	}
	switch ev.Type {
	case agent.EventStartReasoning:
		t.reasoning = true
	case agent.EventStartResponse:
		t.reasoning = false
	case agent.EventAppendText:
		if !t.reasoning && ev.Text != "" {
			s := ev.Text
			if t.toolsRan && t.text.Len() > 0 {
				s = "\n\n" + s
			}
			t.toolsRan = false
			t.text.WriteString(s)
			t.notify(s)
		}
	case agent.EventToolResult:
		t.toolsRan = true
	case agent.EventMessage:
		if ev.Message != nil && ev.Message.Type == agent.MessageAssistant {
			t.answerID = ev.Message.ID
		}
	case agent.EventApprovalRequest:
		switch {
		case t.mrtr:
			t.want(agent.InboxID(agent.InboxApproval, t.convID, ev.CallID), approvalParams(ev))
			t.draining = t.draining || t.live
		case !t.modern:
			t.elicit(ev)
		}
	case agent.EventApproval:
		delete(t.waits, agent.InboxID(agent.InboxApproval, t.convID, ev.CallID))
	case agent.EventElicitationRequest:
		if t.mrtr {
			t.want(agent.InboxID(agent.InboxElicitation, t.convID, ev.RequestID), elicitParams(ev))
			t.draining = t.draining || t.live
		}
	case agent.EventElicitation:
		delete(t.waits, agent.InboxID(agent.InboxElicitation, t.convID, ev.RequestID))
	case agent.EventError:
		t.errMsg = agent.FailureText(ev.Code, ev.Error)
	case agent.EventInterrupted:
		t.interrupted = true
	case agent.EventEnd:
		t.ended = true
		return true
	}
	return false
}

// closing reports whether ch (a shutdown's) is closed.
func closing(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// notify sends a progress notification carrying a piece of the answer,
// when the client asked for progress. Its resume field is the event id
// it goes out with (idOnly), where a reconnect resumes the call.
func (t *turnCall) notify(piece string) {
	if t.token == nil {
		return
	}
	t.progress += float64(len(piece))
	if t.seq <= t.sent {
		return // a resumed call's client has it
	}
	params := map[string]any{
		"progressToken": t.token,
		"progress":      t.progress,
		"message":       piece,
		resumeField:     resumeToken{Conv: t.convID, Turn: t.turnSeq, Seq: t.seq, Token: t.token, ID: t.rpcID}.String(),
	}
	if t.out != nil {
		t.frames = append(t.frames, t.out(params))
		return
	}
	err := t.h.mcp.SendNotificationToClient(t.ctx, string(mcp.MethodNotificationProgress), params)
	if err != nil {
		t.h.log.Debug("mcp_progress_dropped", "err", err)
	} else {
		t.primed.Store(true)
		t.pushed++
	}
}

// flushWait bounds how long a call's result waits for its progress
// notifications to reach the stream.
const flushWait = 5 * time.Second

// flushed waits until the progress notifications sent are written to the
// call's stream (see written), so that none is lost behind the result: on
// 2026-07-28 only, where each request has its session, and so its
// notifications, to itself (a 2025-11-25 session's go in order, on
// whichever of its streams reads first).
func (t *turnCall) flushed() {
	if wc, ok := t.ctx.Value(writtenKey{}).(*written); ok && t.modern && t.pushed > 0 && !wc.wait(t.ctx, t.pushed, flushWait) && t.ctx.Err() == nil {
		t.h.log.Warn("mcp_progress_unflushed", "conversation_id", t.convID, "sent", t.pushed)
	}
}

// elicit asks the MCP client to approve a tool call, when it declared
// elicitation; otherwise (or when the person cancels) the call waits for
// a decision in agentik's UI.
func (t *turnCall) elicit(ev *agent.Event) {
	s := server.ClientSessionFromContext(t.ctx)
	ci, ok := s.(server.SessionWithClientInfo)
	if !ok || ci.GetClientCapabilities().Elicitation == nil {
		return
	}
	params := approvalParams(ev)
	// Its event id is the call's resume token (idOnly): a stream that
	// breaks after it is resumed like one after a progress notification.
	params.Meta = &mcp.Meta{AdditionalFields: map[string]any{
		resumeField: resumeToken{Conv: t.convID, Turn: t.turnSeq, Seq: t.seq, Token: t.token, ID: t.rpcID}.String()}}
	t.primed.Store(true)
	res, err := t.h.mcp.RequestElicitation(t.ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  params,
	})
	if err != nil {
		t.h.log.Info("mcp_elicitation_failed", "conversation_id", t.convID, "err", err)
		return
	}
	a, ok := approvalAnswer(res.ElicitationResponse)
	if !ok { // cancel: left to the UI
		return
	}
	in := agent.ApprovalInput{CallID: ev.CallID, Decision: a.Decision, Reason: a.Reason}
	if err := t.h.cfg.Runner.Approve(context.WithoutCancel(t.ctx), t.convID, in); err != nil && agent.ErrorCode(err) != agent.CodeConflict {
		t.h.log.Warn("mcp_approve_failed", "conversation_id", t.convID, "err", err)
	}
}

// approvalParams is the elicitation that asks to approve ev's tool call.
func approvalParams(ev *agent.Event) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Message: fmt.Sprintf("agentik's agent wants to call the tool %s with %s. Approve it?", ev.Name, agent.Shorten(ev.Arguments, 2000)),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{"type": "string", "enum": []string{agent.DecisionApprove, agent.DecisionDeny}, "description": "run the tool call, or refuse it"},
				"reason":   map[string]any{"type": "string", "description": "why (the model reads it when you deny)"},
			},
			"required": []string{"decision"},
		},
	}
}

// approvalAnswer is the decision an elicitation's answer makes; ok is
// false for a cancel (nothing decided).
func approvalAnswer(res mcp.ElicitationResponse) (agent.InboxAnswer, bool) {
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		var c struct{ Decision, Reason string }
		b, _ := json.Marshal(res.Content)
		_ = json.Unmarshal(b, &c)
		if c.Decision == "" {
			c.Decision = agent.DecisionApprove
		}
		return agent.InboxAnswer{Decision: c.Decision, Reason: c.Reason}, true
	case mcp.ElicitationResponseActionDecline:
		return agent.InboxAnswer{Decision: agent.DecisionDeny, Reason: "declined by the MCP client's user"}, true
	}
	return agent.InboxAnswer{}, false
}

// result is the call's result: the answer's text, and where it is.
func (t *turnCall) result() *mcp.CallToolResult {
	structured := map[string]any{"conversation_id": t.convID, "message_id": t.answerID}
	text := t.text.String()
	switch {
	case t.errMsg != "":
		r := mcp.NewToolResultStructured(structured, strings.TrimSpace(text+"\n\nagentik: "+t.errMsg))
		r.IsError = true
		return r
	case t.interrupted:
		return mcp.NewToolResultStructured(structured, strings.TrimSpace(text+"\n\n(interrupted)"))
	}
	return mcp.NewToolResultStructured(structured, text)
}
