package agent

import (
	"context"
	"fmt"
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
		// The calls of a round the dead process ran get their answer first.
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
