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
		if part, err := r.partial(ctx, c); err != nil {
			r.log.Warn("recover_partial_failed", "conversation_id", c.ID, "err", err)
		} else if part != nil {
			recs = append([]*Record{part}, recs...)
		}
		if mem, _, err := r.memory(ctx, r.cfg.Store, c.ID); err == nil {
			recs = append(r.answerRecords(c.ID, mem, whyRestart), recs...)
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

// partialPage is how many events partial reads at a time.
const partialPage = 1000

// partial is the record that keeps the answer a dead turn of c streamed
// after its last stored message (its append_text events, as reasoning or
// text by the start_* before them), marked interrupted; nil when there is
// none.
func (r *Runner) partial(ctx context.Context, c Conversation) (*Record, error) {
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
