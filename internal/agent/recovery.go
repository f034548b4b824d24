package agent

import (
	"context"
	"fmt"
	"strings"
)

// Recover ends the turns whose process died: each becomes an error message
// with code interrupted_by_restart, then error and end events. It runs at
// start and periodically, for instances that die while others run.
func (r *Runner) Recover(ctx context.Context) error {
	if r.cfg.Cluster == nil {
		return nil
	}
	convs, err := r.cfg.Cluster.OrphanedTurns(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	for _, c := range convs {
		r.mu.Lock()
		live := r.turns[c.ID] != nil
		r.mu.Unlock()
		if live {
			continue // ours, and still running
		}
		if stored, err := r.recoverWaiting(ctx, c); err != nil || stored {
			if err != nil {
				return err
			}
			continue // waits for decisions, or resumed
		}
		const msg = "the turn stopped without finishing: the server restarted, or could not save its end; send the message again"
		recs := r.failRecords(c.ID, Errorf(CodeInterruptedByRestart, msg), nil)
		// The answer clients saw stream is kept, marked interrupted, as an
		// interrupt keeps it; the calls of a round the dead process ran get
		// their answer.
		dels := map[string]Event{} // the turn's delegations, by call id
		if part, err := r.partial(ctx, c, dels); err != nil {
			r.log.Warn("recover_partial_failed", "conversation_id", c.ID, "err", err)
		} else if part != nil {
			recs = append([]*Record{part}, recs...)
		}
		if mem, _, err := r.memory(ctx, r.cfg.Store, c.ID); err == nil {
			recs = append(r.answerRecordsBy(c.ID, mem, restarted(dels)), recs...)
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

// restarted answers the calls a dead turn left open. A delegation's
// child conversation died with it (Recover ends its turn too, keeping the
// answer it had streamed, marked interrupted): the result links the child
// and says so. A remote agent's task is not followed again after a
// restart: its id was never stored, and the text it streamed before is
// all that was acknowledged (it is kept in the child).
func restarted(dels map[string]Event) func(ToolCall) Message {
	return func(c ToolCall) Message {
		d, ok := dels[c.ID]
		if !ok {
			return Message{Result: whyRestart}
		}
		return Message{ChildID: d.ChildID, Result: fmt.Sprintf("the server restarted while agent %s worked on this, so its answer is unfinished: what it had answered so far is kept in its conversation %s, marked interrupted; call %s again to have the work redone", d.Agent, d.ChildID, c.Name)}
	}
}

// partialPage is how many events partial reads at a time.
const partialPage = 1000

// partial is the record that keeps the answer a dead turn of c streamed
// after its last stored message (its append_text events, as reasoning or
// text by the start_* before them), marked interrupted; nil when there is
// none. It adds the turn's delegation events to dels, by call id.
func (r *Runner) partial(ctx context.Context, c Conversation, dels map[string]Event) (*Record, error) {
	if c.TurnSeq <= 0 {
		return nil, nil
	}
	var text, reasoning strings.Builder
	phase := ""
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
				dels[e.CallID] = *e
			case EventMessage:
				text.Reset() // stored up to here
				reasoning.Reset()
				phase = ""
			case EventStartReasoning, EventStartResponse:
				phase = e.Type
			case EventAppendText:
				if phase == EventStartReasoning {
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
	if text.Len() == 0 && reasoning.Len() == 0 {
		return nil, nil
	}
	m := Message{Type: MessageAssistant, ConversationID: c.ID, Reasoning: reasoning.String(), Interrupted: true}
	answer := ModelMessage{Role: RoleAssistant, Reasoning: m.Reasoning}
	if text.Len() > 0 {
		m.Content = []Content{Text(text.String())}
		answer.Content = m.Content
	}
	return r.messageRecord(m, answer), nil
}
