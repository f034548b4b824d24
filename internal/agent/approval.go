package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Decisions of an approval.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// maxReason caps the reason of a decision.
const maxReason = 2000

// errParked ends a turn's goroutine without ending the turn: its tool calls
// wait for decisions, stored, and whoever decides the last one resumes it.
var errParked = errors.New("waiting for approval")

// PendingCall is one tool call of a round that waits for decisions, with
// its decision once made. Calls of the round that need no approval wait
// with the others and run, in order, when the turn resumes.
type PendingCall struct {
	CallID, Name, Arguments string
	Needs                   bool // waits for a decision
	Decided, Approved       bool
	Edited                  string // arguments the approver gave instead; "" for none
	Reason                  string
	// Requested is when the round was parked: the approval timeout counts
	// from it, across restarts (zero for a round stored before it was kept).
	Requested time.Time
}

// Decision is one approve or deny of a waiting call.
type Decision struct {
	CallID    string
	Approve   bool
	Arguments string // edited arguments (a JSON object), "" for none
	Reason    string
	By        string // who decided: a user id, or ByTimeout
	Last      bool   // set by the store: no call of the round waits any more
}

// ApprovalInput is what a client decides.
type ApprovalInput struct {
	CallID    string
	Decision  string          // DecisionApprove or DecisionDeny
	Arguments json.RawMessage // approve only: edited arguments, a JSON object
	Reason    string
}

// needsApproval reports whether a call of the tool waits for a decision.
func (r *Runner) needsApproval(name string) bool {
	return r.cfg.Approval != nil && r.cfg.Approval(name)
}

// mustWait reports whether the round waits: a call needs approval (a
// round with tools the client runs is never held).
func (t *turn) mustWait(calls []ToolCall) bool {
	return slices.ContainsFunc(calls, func(c ToolCall) bool { return t.needsApproval(c) }) &&
		!slices.ContainsFunc(calls, func(c ToolCall) bool { return t.isClientTool(c.Name) })
}

// park stores the round's calls as waiting, emits an approval_request for
// each that needs a decision, and ends the turn's goroutine with the turn
// still running. An interrupt that came meanwhile ends the wait at once;
// a shutdown does not.
func (t *turn) park(calls []ToolCall) error {
	var pend []PendingCall
	var recs []*Record
	now := t.r.now()
	for _, c := range calls {
		p := PendingCall{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Needs: t.needsApproval(c), Requested: now}
		pend = append(pend, p)
		if p.Needs {
			recs = append(recs, &Record{Event: t.r.event(t.conv.ID, Event{Type: EventApprovalRequest, CallID: c.ID, Name: c.Name, Arguments: c.Arguments})})
		}
	}
	recs[0].Wait = pend
	recs = append(recs, t.r.waitingRecord(t.conv.ID))
	if err := t.emitRecs(recs...); err != nil {
		return err
	}
	// A shutdown that came meanwhile leaves the wait stored (it outlives
	// restarts); an interrupt or a failure ends it.
	if t.ctx.Err() != nil && !errors.Is(context.Cause(t.ctx), errShutdown) {
		recs := t.r.waitEndRecords(t.conv.ID, pend)
		recs[0].EndWait = true
		recs = append(recs, t.r.waitingRecord(t.conv.ID))
		if err := t.emitRecs(recs...); err != nil {
			return err
		}
		return context.Cause(t.ctx)
	}
	t.r.log.Info("turn_waiting", "conversation_id", t.conv.ID, "calls", len(recs)-1)
	t.r.watchWait(t.ctx, t.conv.ID, now)
	return errParked
}

// waitingRecord is the waiting agent event of conversation id; the store
// fills in the calls that wait as of its place in the batch, so it follows
// the record that changed them.
func (r *Runner) waitingRecord(id string) *Record {
	return &Record{Event: r.agentEvent(AgentEvent{Type: AgentWaiting, ConversationID: id})}
}

// waitEndRecords give each waiting call an interrupted result.
func (r *Runner) waitEndRecords(convID string, pend []PendingCall) []*Record {
	var recs []*Record
	for _, p := range pend {
		res := Message{Type: MessageToolResult, ConversationID: convID, CallID: p.CallID, Name: p.Name, Result: "interrupted before the tool ran", IsError: true}
		recs = append(recs, &Record{Event: r.event(convID, Event{Type: EventToolResult, CallID: p.CallID, Name: p.Name, Result: res.Result, IsError: true})})
		rec := r.messageRecord(res, res.memory())
		rec.Resolve = p.CallID
		recs = append(recs, rec)
	}
	return recs
}

// runPending runs the calls of a resumed round: approved ones (with their
// edited arguments), those that needed no approval, and denied ones as an
// error result the model reads.
func (t *turn) runPending(mem []ModelMessage) ([]ModelMessage, error) {
	t.roundStored = true // resolved as it goes
	defer func() { t.roundStored = false }()
	var rest []ToolCall
	for _, p := range t.resume {
		args := p.Arguments
		if p.Edited != "" {
			args = p.Edited
		}
		rest = append(rest, ToolCall{ID: p.CallID, Name: p.Name, Arguments: args})
	}
	for i, p := range t.resume {
		c := ToolCall{ID: p.CallID, Name: p.Name, Arguments: p.Arguments}
		var res Message
		if p.Needs && !p.Approved {
			msg := "the user denied this tool call"
			if p.Reason != "" {
				msg += ": " + p.Reason
			}
			res = Message{Type: MessageToolResult, ConversationID: t.conv.ID, CallID: c.ID, Name: c.Name, Result: msg, IsError: true}
		} else {
			if p.Edited != "" {
				c.Arguments = p.Edited
			}
			res = t.callTool(c, rest[i:])
			if t.parked {
				return mem, errParked
			}
		}
		if err := t.liveResult(res); err != nil {
			return mem, err
		}
		rec := t.r.messageRecord(res, res.memory())
		rec.Resolve = p.CallID
		if err := t.emit(rec); err != nil {
			return mem, err
		}
		mem = append(mem, res.memory())
	}
	t.resume = nil
	if t.ctx.Err() != nil {
		return mem, context.Cause(t.ctx)
	}
	return mem, nil
}

// Approve decides a waiting tool call: approve runs it (with the edited
// arguments, if given), deny gives the model an error result with the
// reason. The first decision wins; a second is a conflict; an unknown call
// is not_found. The decision of the round's last waiting call resumes the
// turn here, whichever instance started it.
func (r *Runner) Approve(ctx context.Context, id string, in ApprovalInput) error {
	return r.approve(ctx, id, in, PrincipalFrom(ctx).UserID)
}

// approve is Approve of a decision by (who the inbox names).
func (r *Runner) approve(ctx context.Context, id string, in ApprovalInput, by string) error {
	if err := r.access(ctx, id); err != nil {
		return err
	}
	if in.CallID == "" {
		return Errorf(CodeBadRequest, "approve needs call_id")
	}
	switch in.Decision {
	case DecisionApprove, DecisionDeny:
	default:
		return Errorf(CodeBadRequest, "decision must be %q or %q, got %q", DecisionApprove, DecisionDeny, Shorten(in.Decision, 40))
	}
	if len(in.Reason) > maxReason {
		return Errorf(CodeBadRequest, "reason is %d bytes long; at most %d are allowed", len(in.Reason), maxReason)
	}
	edited := ""
	if len(in.Arguments) > 0 && string(in.Arguments) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(in.Arguments, &obj); err != nil || obj == nil {
			return Errorf(CodeBadRequest, "arguments must be a JSON object (the tool's edited arguments)")
		}
		if in.Decision == DecisionApprove {
			edited = string(in.Arguments)
		}
	}
	st := r.storeOf(id)
	if _, err := st.Conversation(ctx, id); err != nil {
		return err
	}
	dec := &Decision{CallID: in.CallID, Approve: in.Decision == DecisionApprove, Arguments: edited, Reason: in.Reason, By: by}
	ev := Event{Type: EventApproval, CallID: in.CallID, Decision: in.Decision, Reason: in.Reason, Arguments: edited}
	if err := st.Append(ctx, &Record{Event: r.event(id, ev), Decide: dec}, r.waitingRecord(id)); err != nil {
		return fmt.Errorf("approve: %w", err)
	}
	r.cfg.Audit.Record(ctx, AuditApproval, id, map[string]string{"call_id": in.CallID, "decision": in.Decision})
	if dec.Last {
		r.resumeTurn(context.WithoutCancel(ctx), id)
	}
	return nil
}

// resumeTurn continues a turn whose waiting round is decided: the turn is
// rebuilt from working memory and the stored calls. Of several resumes at
// once (a decision here, Recover, another instance) one runs the round: a
// resume whose reads a turn of this runner has moved since (it ended, or
// parked, see r.ends) reads again, and finds the round resolved.
func (r *Runner) resumeTurn(ctx context.Context, id string) {
	st := r.storeOf(id)
	for range maxStartTries {
		ends := r.endsOf(id) // before the reads
		c, err := st.Conversation(ctx, id)
		if err != nil || !c.Running || len(c.Waiting) > 0 {
			return
		}
		pend, err := st.Pending(ctx, id)
		if err != nil || len(pend) == 0 {
			if err != nil {
				r.log.Error("turn_resume_failed", "conversation_id", id, "err", err)
			}
			return
		}
		if h := r.hooks.resumeRead; h != nil {
			h(id)
		}
		var prev *turn
		t, err := r.claim(ctx, st, c, turnOptions{resume: pend, traced: true}, func() error {
			switch {
			case r.turns[id] != nil:
				prev = r.turns[id]
				return errAgain
			case r.ends[endStripe(id)] != ends:
				return errAgain // what was read is stale: read again
			}
			return nil
		})
		switch {
		case errors.Is(err, errAgain) && prev != nil:
			// The goroutine that parked the round may not have exited yet
			// when a quick decision arrives: wait for it, or nobody
			// resumes. It may not have parked: then it ran the round
			// itself, and the next reads say so.
			if h := r.hooks.resumeWaits; h != nil {
				h(id)
			}
			select {
			case <-prev.done:
			case <-ctx.Done():
				return
			}
			continue
		case errors.Is(err, errAgain):
			continue
		case err != nil:
			return
		}
		r.log.Info("turn_resumed", "conversation_id", id)
		_ = r.begin(ctx, t, nil, nil, nil) // nothing to write: it cannot fail
		return
	}
	// Still moving after every try: Recover resumes a decided round that
	// nobody runs.
}

// endWaiting ends a turn that waits for decisions and runs nowhere: each
// waiting call gets an interrupted result, then interrupted and end. It
// reports false when the turn was resumed meanwhile.
func (r *Runner) endWaiting(ctx context.Context, c Conversation) (bool, error) {
	st := r.storeOf(c.ID)
	pend, err := st.Pending(ctx, c.ID)
	if err != nil {
		return false, fmt.Errorf("interrupt: %w", err)
	}
	recs := r.waitEndRecords(c.ID, pend)
	if len(recs) == 0 {
		return false, nil
	}
	recs[0].EndWait = true
	recs = append(recs, r.waitingRecord(c.ID), &Record{Event: r.event(c.ID, Event{Type: EventInterrupted})})
	recs = append(recs, r.endRecords(c.ID, nil)...)
	if err := st.Append(ctx, recs...); err != nil {
		if errors.Is(err, ErrConflict) {
			return false, nil
		}
		return false, fmt.Errorf("interrupt: %w", err)
	}
	return true, nil
}

// recoverWaiting handles a claimed turn that has a stored round: one still
// waiting stays as it is; one whose decisions are all made resumes here.
// It reports whether c had a stored round.
func (r *Runner) recoverWaiting(ctx context.Context, c Conversation) (bool, error) {
	pend, err := r.cfg.Store.Pending(ctx, c.ID)
	if err != nil {
		return false, fmt.Errorf("recover %s: %w", c.ID, err)
	}
	if len(pend) == 0 {
		return false, nil
	}
	if len(c.Waiting) == 0 {
		r.resumeTurn(context.WithoutCancel(ctx), c.ID)
	} else {
		r.watchWait(ctx, c.ID, pend[0].Requested)
	}
	return true, nil
}

// watchWait arms the approval timeout of conversation id's waiting round,
// whose calls were requested at requested (zero: unknown, counted from
// now). One timer per conversation: a later round is seen when it fires.
func (r *Runner) watchWait(ctx context.Context, id string, requested time.Time) {
	limit := r.approvalLimit(id)
	if limit <= 0 {
		return
	}
	if requested.IsZero() {
		requested = r.now()
	}
	deadline := requested.Add(limit)
	ctx = context.WithoutCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.timers[id] != nil {
		return
	}
	w := &waitTimer{}
	r.timers[id] = w
	w.stop = r.afterFunc(deadline.Sub(r.now()), func() { r.expireWait(ctx, id, deadline, w) })
}

// approvalLimit is how long a call of conversation id waits for a
// decision (0: until decided): Config.ApprovalTimeout, and for a temp
// conversation (a stateless API request's, which nobody may be watching)
// TempConfig.ApprovalWait when that is 0.
func (r *Runner) approvalLimit(id string) time.Duration {
	if r.cfg.ApprovalTimeout > 0 || !r.IsTemp(id) {
		return r.cfg.ApprovalTimeout
	}
	return cmp.Or(r.cfg.Temp.ApprovalWait, DefaultTempApprovalWait)
}

// waitTimer is the armed approval timeout of one conversation.
type waitTimer struct{ stop func() bool }

// expireWait denies the calls of conversation id that still wait once
// their deadline has passed, with a reason the model reads; the last
// denial resumes the turn, as a person's would. A round requested later
// than the one the timer was armed for arms a timer of its own.
func (r *Runner) expireWait(ctx context.Context, id string, deadline time.Time, w *waitTimer) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if r.timers[id] == w {
		delete(r.timers, id)
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	pend, err := r.storeOf(id).Pending(ctx, id)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			r.log.Error("approval_timeout_failed", "conversation_id", id, "err", err)
		}
		return
	}
	limit := r.approvalLimit(id)
	for _, p := range pend {
		if !p.Needs || p.Decided {
			continue
		}
		due := deadline
		if !p.Requested.IsZero() {
			due = p.Requested.Add(limit)
		}
		if r.now().Before(due) {
			r.watchWait(ctx, id, due.Add(-limit)) // a later round, or an early timer
			return
		}
		in := ApprovalInput{CallID: p.CallID, Decision: DecisionDeny, Reason: fmt.Sprintf("approval timed out after %s", limit)}
		err := r.approve(ctx, id, in, ByTimeout)
		switch {
		case err == nil:
			r.log.Info("approval_timed_out", "conversation_id", id, "call_id", p.CallID)
		case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
			// Decided or ended meanwhile.
		default:
			r.log.Error("approval_timeout_failed", "conversation_id", id, "call_id", p.CallID, "err", err)
		}
	}
}
