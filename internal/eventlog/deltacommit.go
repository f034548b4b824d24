package eventlog

import "github.com/agentik/agentik/internal/agent"

// CommitDeltas is the writer's commit of batch to the delta log instead of
// a transaction (the store's Hooks.Side, for the requests it judged need
// no more): it gives the records their seqs (an event repeated within the
// batch gets the seq of its first, Hooks.Stored), has delta make each one's
// delta log record and encoded event, appends them to log with one write,
// and defers their index entries in conv (by Delta.Conv) and owner (by
// Delta.Owner, when it has one), as for any text delta of a transaction.
// On an error nothing is committed and the seqs are cleared (Hooks.Unseq).
// The writer's goroutine only.
func (w *Writer[R]) CommitDeltas(log *DeltaLog, batch []*Request[R], conv, owner *RunIndex, delta func(rec R, seq int64) (Delta, agent.Encoded, error)) ([]agent.Encoded, error) {
	h := &w.hooks
	seq := w.last
	recs, byConv, byOwner := w.deltas[:0], w.convEntries[:0], w.ownerEntries[:0]
	defer func() { // no payload nor id kept alive
		clear(recs)
		clear(byConv)
		clear(byOwner)
		w.deltas, w.convEntries, w.ownerEntries = recs[:0], byConv[:0], byOwner[:0]
	}()
	n := 0
	for _, r := range batch {
		n += len(r.Recs)
	}
	evs := make([]agent.Encoded, 0, n)
	seen := w.seen
	clear(seen)
	undo := func(err error) ([]agent.Encoded, error) {
		for _, r := range batch {
			for _, rec := range r.Recs {
				h.Unseq(rec)
			}
		}
		return nil, err
	}
	for _, r := range batch {
		for _, rec := range r.Recs {
			id, _ := h.ID(rec)
			if have, ok := seen[id]; ok {
				h.Stored(rec, have)
				continue
			}
			seq++
			d, enc, err := delta(rec, seq)
			if err != nil {
				return undo(err)
			}
			// Deferred (the store made room), once the append succeeds.
			byConv = append(byConv, RunEntry{Key: d.Conv, Seq: seq})
			if d.Owner != "" {
				byOwner = append(byOwner, RunEntry{Key: d.Owner, Seq: seq})
			}
			recs = append(recs, d)
			evs = append(evs, enc)
			if seen == nil {
				seen = make(map[string]int64, 64)
				w.seen = seen
			}
			seen[id] = seq
		}
	}
	if err := log.Append(recs); err != nil {
		return undo(err)
	}
	conv.Defer(byConv)
	owner.Defer(byOwner)
	w.last = seq
	return evs, nil
}
