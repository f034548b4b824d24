package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Recover takes over the turns whose process died. Each is continued
// from its last stored step (continueTurn): the answer it was streaming is
// asked again with what was kept, a tool call it was running is answered
// with an error saying so, and the model decides. A turn continued
// Config.Continuations times already (a crash loop), or any turn when
// continuations are off, ends as before: its streamed answer kept, marked
// interrupted, its open calls answered, then an interrupted_by_restart
// error and its end. It runs at start and periodically, for instances
// that die while others run.
func (r *Runner) Recover(ctx context.Context) error {
	if r.cfg.Cluster == nil {
		return nil
	}
	r.mu.Lock()
	ends := r.ends // before the read: a turn of this runner that ends or parks after it moves its stripe
	r.mu.Unlock()
	convs, err := r.cfg.Cluster.OrphanedTurns(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	if h := r.hooks.recoverRead; h != nil {
		h()
	}
	for _, c := range convs {
		r.mu.Lock()
		s := endStripe(c.ID)
		live, moved := r.turns[c.ID] != nil, r.ends[s] != ends[s]
		r.mu.Unlock()
		if live || moved {
			// Ours, and still running; or a turn of ours ended or parked
			// since the read, and what was read is stale (recovering it
			// would end a finished turn twice): the next Recover reads it
			// again.
			continue
		}
		if stored, err := r.recoverWaiting(ctx, c); err != nil || stored {
			if err != nil {
				return err
			}
			continue // waits for decisions, or resumed
		}
		tail, err := r.tail(ctx, c)
		if err != nil {
			r.log.Warn("recover_partial_failed", "conversation_id", c.ID, "err", err)
			tail = &turnTail{dels: map[string]Event{}}
		} else if ok, err := r.continueTurn(ctx, c, tail); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		msg := "the turn stopped without finishing: the server restarted, or could not save its end; send the message again"
		if tail.continued > 0 {
			msg = fmt.Sprintf("the turn stopped without finishing: the server restarted %d times while it ran, more than a turn is continued after; send the message again", tail.continued+1)
		}
		recs := r.failRecords(c.ID, Errorf(CodeInterruptedByRestart, "%s", msg), nil)
		// The answer clients saw stream is kept, marked interrupted, as an
		// interrupt keeps it; the calls of a round the dead process ran get
		// their answer.
		if part := r.partialRecord(c, tail); part != nil {
			recs = append([]*Record{part}, recs...)
		}
		if mem, _, err := r.memory(ctx, r.cfg.Store, c.ID); err == nil {
			recs = append(r.answerRecordsBy(c.ID, mem, restarted(tail.dels)), recs...)
		} else {
			r.log.Warn("recover_memory_failed", "conversation_id", c.ID, "err", err)
		}
		if err := r.cfg.Store.Append(ctx, recs...); err != nil {
			return fmt.Errorf("recover %s: %w", c.ID, err)
		}
		r.log.Info("turn_recovered", "conversation_id", c.ID)
	}
	return r.recoverQueued(ctx)
}

// DefaultContinuations is how many times a turn is continued after its
// process died, unless Config.Continuations says otherwise.
const DefaultContinuations = 3

// continuations is the bound of continuations per turn (0: none).
func (r *Runner) continuations() int {
	switch n := r.cfg.Continuations; {
	case n < 0:
		return 0
	case n == 0:
		return DefaultContinuations
	default:
		return n
	}
}

// continueTurn continues conversation c's dead turn, whose stored tail is
// tail, and reports whether it did (false: the bound is reached, or
// continuations are off; the caller ends it). The calls its last round
// left open get an error result saying the server restarted (they are not
// run again: the model decides), a continued event counts the attempt,
// and a turn starts on this runner from working memory with the kept
// answer as the prefix of its first model call (turn.go). A turn whose
// answer was stored and only its end was lost just ends.
func (r *Runner) continueTurn(ctx context.Context, c Conversation, tail *turnTail) (bool, error) {
	if bound := r.continuations(); bound == 0 || tail.continued >= bound || c.Temp {
		return false, nil
	}
	mem, _, err := r.memory(ctx, r.cfg.Store, c.ID)
	if err != nil {
		r.log.Warn("recover_memory_failed", "conversation_id", c.ID, "err", err)
		return false, nil
	}
	recs := r.answerRecordsBy(c.ID, mem, restarted(tail.dels))
	if tail.text == "" && tail.reasoning == "" && len(recs) == 0 && answered(mem) {
		if err := r.cfg.Store.Append(ctx, r.endRecords(c.ID, nil)...); err != nil {
			return false, fmt.Errorf("recover %s: %w", c.ID, err)
		}
		r.log.Info("turn_recovered", "conversation_id", c.ID, "answered", true)
		return true, nil
	}
	// The turn runs as the conversation's owner, as a delegation does.
	owner := Principal{UserID: OwnerOf(c), Role: RoleMember}
	if owner.UserID == LocalUser {
		owner = Local
	}
	t, err := r.claim(WithPrincipal(ctx, owner), r.cfg.Store, c, turnOptions{traced: true, cont: tail}, nil)
	if err != nil {
		// Closing: the next start continues it. Busy: a turn of this
		// runner holds it already.
		return true, nil
	}
	recs = append([]*Record{{Event: r.event(c.ID, Event{Type: EventContinued, Attempt: tail.continued + 1})}}, recs...)
	if err := r.cfg.Store.Append(ctx, recs...); err != nil {
		r.release(t)
		if errors.Is(err, ErrNotFound) {
			return true, nil // deleted meanwhile
		}
		return false, fmt.Errorf("recover %s: %w", c.ID, err)
	}
	r.log.Info("turn_continued", "conversation_id", c.ID, "attempt", tail.continued+1, "kept_bytes", len(tail.text)+len(tail.reasoning))
	_ = r.begin(ctx, t, nil, nil, nil) // nothing to write: it cannot fail
	return true, nil
}

// answered reports whether mem ends with the model's answer (no tool
// calls): a turn that stored it has nothing left to ask.
func answered(mem []ModelMessage) bool {
	n := len(mem)
	return n > 0 && mem[n-1].Role == RoleAssistant && len(mem[n-1].ToolCalls) == 0
}

// restarted answers the calls a dead turn left open: not run again, the
// model reads why. A delegation's child conversation died with it: Recover
// continues (or ends) it on its own, but its answer no longer comes back
// to this call, so the result links the child and says so. A remote
// agent's task is not followed again after a restart: its id was never
// stored, and the text it streamed before is all that was acknowledged
// (it is kept in the child).
func restarted(dels map[string]Event) func(ToolCall) Message {
	return func(c ToolCall) Message {
		d, ok := dels[c.ID]
		if !ok {
			return Message{Result: whyRestart}
		}
		return Message{ChildID: d.ChildID, Result: fmt.Sprintf("interrupted by a restart: the server restarted while agent %s worked on this, so its answer does not come back here; what it answered is in its conversation %s; call %s again to have the work redone", d.Agent, d.ChildID, c.Name)}
	}
}

// partialPage is how many events tail reads at a time.
const partialPage = 1000

// turnTail is what a dead turn left after its last stored message: the
// answer it streamed (its append_text events, as reasoning or text by the
// start_* before them), the phase it was in, its delegations by call id,
// and how many times it was continued already.
type turnTail struct {
	text, reasoning string
	phase           string // EventStartReasoning, EventStartResponse or ""
	continued       int
	dels            map[string]Event
}

// tail reads the events of c's dead turn.
func (r *Runner) tail(ctx context.Context, c Conversation) (*turnTail, error) {
	t := &turnTail{dels: map[string]Event{}}
	if c.TurnSeq <= 0 {
		return t, nil
	}
	var text, reasoning strings.Builder
	for after := c.TurnSeq - 1; ; {
		evs, err := r.cfg.Cluster.Events(ctx, EventQuery{After: after, ConversationID: c.ID, Limit: partialPage})
		if err != nil {
			return nil, err
		}
		for _, ae := range evs {
			after = ae.Seq
			e := ae.Event
			if e == nil {
				continue
			}
			switch e.Type {
			case EventDelegation:
				t.dels[e.CallID] = *e
			case EventContinued:
				t.continued++
			case EventMessage:
				text.Reset() // stored up to here
				reasoning.Reset()
				t.phase = ""
			case EventStartReasoning, EventStartResponse:
				t.phase = e.Type
			case EventAppendText:
				if t.phase == EventStartReasoning {
					reasoning.WriteString(e.Text)
				} else {
					text.WriteString(e.Text)
				}
			}
		}
		if len(evs) == 0 {
			break
		}
	}
	t.text, t.reasoning = text.String(), reasoning.String()
	return t, nil
}

// partialRecord is the record that keeps the answer a dead turn of c
// streamed, marked interrupted; nil when there is none.
func (r *Runner) partialRecord(c Conversation, t *turnTail) *Record {
	if t.text == "" && t.reasoning == "" {
		return nil
	}
	m := Message{Type: MessageAssistant, ConversationID: c.ID, Reasoning: t.reasoning, Interrupted: true}
	answer := ModelMessage{Role: RoleAssistant, Reasoning: m.Reasoning}
	if t.text != "" {
		m.Content = []Content{Text(t.text)}
		answer.Content = m.Content
	}
	return r.messageRecord(m, answer)
}
