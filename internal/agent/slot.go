package agent

import (
	"context"
	"errors"
)

// A conversation has at most one turn at a time, on any number of
// instances. The rule has two halves, and both live here:
//
//   - in this runner, claim registers the turn under r.mu, once no other
//     turn (or compaction) of this runner holds the conversation;
//   - across instances, begin writes the turn's first record with
//     TurnStart, a conditional write: the store refuses it with busy
//     (ErrTurnRunning) when the conversation is marked running, so of two
//     instances that both read it idle, one starts and the other is busy.
//
// Every way a turn starts goes through claim: a send (and the results of
// client-side tools, and regenerate), a queued send, the resume of a
// decided approval round, and a manual compaction (which holds the
// conversation like a turn without writing TurnStart). Each caller keeps
// only its own reasons to refuse before that (check).

// ErrTurnRunning is the busy error of a conversation whose turn is running.
func ErrTurnRunning(id string) *Error {
	return Errorf(CodeBusy, "a turn is running in conversation %s; wait for it to end or interrupt it", id)
}

// turnOptions is what a new turn carries besides its conversation.
type turnOptions struct {
	clientID    string
	prompt      []Content
	clientTools []ToolSpec
	knowledge   []string        // knowledge.go
	format      *ResponseFormat // completion.go
	choice      *ToolChoice
	resume      []PendingCall
	app         []ToolCall // an MCP App's call (appcall.go)
	cont        *turnTail  // a dead turn's stored tail: this turn continues it (recovery.go)
	traced      bool       // wrap the context with Config.TurnContext
}

// claim makes conversation c's next turn and registers it, or fails:
// errClosed once the runner closes, check's error (called with r.mu held;
// nil: no check), or ErrTurnRunning while a turn of this runner holds c.
// The turn's context is ctx's values without its cancellation: a turn
// outlives the request that started it. The caller either begins the turn
// or, when it runs it inline, calls release.
func (r *Runner) claim(ctx context.Context, st Store, c Conversation, o turnOptions, check func() error) (*turn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	if r.turns[c.ID] != nil {
		return nil, ErrTurnRunning(c.ID)
	}
	tctx, ended := context.WithoutCancel(ctx), func() {}
	if o.traced && r.cfg.TurnContext != nil {
		tctx, ended = r.cfg.TurnContext(tctx, c.ID)
	}
	tctx, cancel := context.WithCancelCause(tctx)
	t := &turn{r: r, st: st, conv: c, ctx: tctx, cancel: cancel, done: make(chan struct{}), started: make(chan struct{}),
		ended: ended, clientID: o.clientID, prompt: o.prompt, clientTools: o.clientTools, knowledge: o.knowledge, format: o.format, choice: o.choice, resume: o.resume, app: o.app, cont: o.cont}
	r.turns[c.ID] = t // sends see busy meanwhile; Interrupt cancels it
	r.wg.Add(1)
	return t, nil
}

// begin writes recs, the first marked TurnStart (none: a resumed turn,
// already running in the store), after pre in the same append (the
// records that create a new conversation, start.go), then runs written
// (nil: nothing) and starts t's goroutine. A failed write releases t and
// is returned: busy when another instance started a turn of the
// conversation meanwhile.
func (r *Runner) begin(ctx context.Context, t *turn, pre, recs []*Record, written func()) error {
	if len(recs) > 0 {
		recs[0].Turn = TurnStart
		if err := t.st.Append(ctx, append(pre, recs...)...); err != nil {
			close(t.started)
			r.release(t)
			return err
		}
	}
	if written != nil {
		written()
	}
	close(t.started)
	go t.run()
	return nil
}

// release gives the conversation back after a claim whose turn ends
// without its goroutine (a failed start, a compaction run inline).
func (r *Runner) release(t *turn) {
	t.cancel(nil)
	r.endTurn(t)
}

// errAgain is what a claim's check returns to have its caller wait or
// read again and retry; it never leaves the package.
var errAgain = errors.New("claim again")
