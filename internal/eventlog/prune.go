package eventlog

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// Pruned is what Prune deletes beside the events table's prefix.
type Pruned struct {
	// Side is the delta log (nil: none): its records are pruned with the
	// table's.
	Side *DeltaLog
	// Runs are the run index tables whose rows of the deleted events go
	// with them; Indexes the writer's waiting entries of those indexes,
	// forgotten (nil: none).
	Runs    []*Runs
	Indexes []*RunIndex
}

// PruneSQL deletes the rows of k of the events through a seq (its
// parameter), found by the events (a row's key is its highest seq).
func (k *Runs) PruneSQL() string {
	return "DELETE FROM " + k.Table + " WHERE (" + k.Column + ", seq) IN (SELECT " + k.Column + ", seq FROM " + k.Events + " WHERE seq <= ? AND " + k.Indexed + ")"
}

// Prune deletes the log's oldest events, those before the first one
// created at or after before (in the events table or the delta log), with
// their run index rows (p), records the highest deleted seq as the
// pruned-through seq (Table.Pruned) and returns how many it deleted. It
// runs on the writer's database, beside the writer's goroutine: on
// PostgreSQL under the seq lock.
//
// It prunes a prefix of the log, never a hole: an event older than before
// that follows a newer one (the clock stepped back) waits for the newer
// one. Finding the prefix reads the rows it deletes, in seq order, and no
// more, so the created column needs no index.
func (w *Writer[R]) Prune(ctx context.Context, before time.Time, p Pruned) (int64, error) {
	t := &w.cfg.Table
	seqCol, createdCol := t.Columns[0], t.Columns[3]
	var n, pruneTop int64
	err := w.cfg.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if w.cfg.Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", w.cfg.SeqLock).Error; err != nil {
				return fmt.Errorf("seq lock: %w", err)
			}
		}
		pruned, head, err := t.Bounds(tx)
		if err != nil {
			return err
		}
		if p.Side != nil {
			head = max(head, p.Side.Head())
		}
		top := head // every event is older than before unless one is not
		var kept []int64
		if err := tx.Table(t.Name).Where(createdCol+" >= ?", before).Order(seqCol).Limit(1).Pluck(seqCol, &kept).Error; err != nil {
			return err
		}
		if len(kept) > 0 {
			top = kept[0] - 1
		}
		if p.Side != nil {
			seq, ok, err := p.Side.FirstDated(before)
			if err != nil {
				return err
			}
			if ok {
				top = min(top, seq-1)
			}
		}
		if top <= pruned {
			return nil
		}
		if p.Side != nil && p.Side.Holds(top) {
			// Rows keyed by a delta log's event (runindex.go's stale and
			// recovered runs) are not found through the events table: a
			// scan of the runs, one row per run.
			for _, k := range p.Runs {
				if err := tx.Exec("DELETE FROM "+k.Table+" WHERE seq <= ?", top).Error; err != nil {
					return err
				}
			}
		}
		// Their index entries first, found by the rows.
		for _, k := range p.Runs {
			if err := tx.Exec(k.PruneSQL(), top).Error; err != nil {
				return err
			}
		}
		res := tx.Exec("DELETE FROM "+t.Name+" WHERE "+seqCol+" <= ?", top)
		if res.Error != nil {
			return res.Error
		}
		n, pruneTop = res.RowsAffected, top
		return tx.Exec("INSERT INTO "+t.Meta+" (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			t.Pruned, strconv.FormatInt(top, 10)).Error
	})
	if err != nil {
		return 0, err
	}
	if p.Side != nil && pruneTop > 0 {
		before := p.Side.Count()
		if err := p.Side.Prune(pruneTop); err != nil {
			w.cfg.Log.Error("delta_log_prune", "err", err)
		}
		n += before - p.Side.Count()
	}
	if n > 0 {
		for _, ix := range p.Indexes {
			ix.Forget(pruneTop) // their rows are gone
		}
	}
	return n, nil
}
