package eventlog

import (
	"math"
	"slices"

	"github.com/agentik/agentik/internal/agent"
)

// IndexRead is a read of one key's events by a run index (the replay of a
// conversation, or of an owner's events), in seq order.
type IndexRead struct {
	Index *RunIndex // the writer's waiting entries (nil: none, PostgreSQL)
	Key   string    // the conversation or the owner
	After int64     // the events after this seq
	Limit int       // at most this many (≤ 0: all)
	// MaxBytes ends the read after the event whose JSON reaches it
	// (≤ 0: no bound).
	MaxBytes int
	// Side is the delta log whose events of the seqs are merged in (nil:
	// none, or no delta of the key can be among them); Owner filters its
	// records ("": all).
	Side  *DeltaLog
	Owner string
	// Seqs reads the seqs the index's table holds for Key above after, its
	// rows in order until they give want seqs (≤ 0: all), and whether rows
	// are left then.
	Seqs func(after int64, want int) (seqs []int64, more bool, err error)
	// Rows reads the events table's rows of chunk (ascending), at most
	// limit (≤ 0: all) and budget bytes (≤ 0: no bound), in seq order:
	// with dense, the rows of Key from the first to the last of chunk
	// (some rows may be above the index's seqs: committed since), else
	// the rows of chunk's seqs.
	Rows func(chunk []int64, dense bool, limit, budget int) ([]agent.Encoded, error)
}

// ReadByIndex reads r's events: the seqs the index's table holds for
// r.Key, then those whose entries are waiting, and their rows by seq (the
// delta log's merged in). The waiting seqs are taken before the table is
// read, so the two make every event of r.Key through some commit after
// the call began. A dense stretch of seqs (a conversation that streamed
// alone) is read as a range, a sparse one by its seqs.
func ReadByIndex(r IndexRead) ([]agent.Encoded, error) {
	pending := r.Index.PendingAfter(r.Key, r.After)
	var (
		out   []agent.Encoded
		total int
		after = r.After
	)
	for {
		// The index's next rows: a page's worth (each holds at least one
		// seq), all of them without a limit.
		seqs, more, err := r.Seqs(after, r.Limit)
		if err != nil {
			return nil, err
		}
		if len(seqs) > 0 {
			after = seqs[len(seqs)-1]
		}
		if !more {
			// The end of the index: the pending entries are above it, but
			// one written since they were taken may be in both.
			seqs = append(seqs, pending...)
			slices.Sort(seqs)
			seqs = slices.Compact(seqs)
		}
		for len(seqs) > 0 {
			limit := 0
			if r.Limit > 0 {
				limit = r.Limit - len(out)
			}
			chunk := seqs[:min(len(seqs), 4096)]
			dense := chunk[len(chunk)-1]-chunk[0] < 2*int64(len(chunk))
			if !dense {
				chunk = chunk[:min(len(chunk), 512)]
			}
			seqs = seqs[len(chunk):]
			budget := 0 // the page's bytes left, if it has a bound
			if r.MaxBytes > 0 {
				budget = r.MaxBytes - total
			}
			evs, err := r.Rows(chunk, dense, limit, budget)
			if err != nil {
				return nil, err
			}
			if r.Side != nil {
				// The delta log's events of the chunk. The index's seqs
				// are the authority: a range read's rows of seqs outside
				// it (committed since) are left for later.
				if evs, err = withDeltas(r.Side, evs, chunk, limit, budget, r.Owner); err != nil {
					return nil, err
				}
			}
			for _, e := range evs {
				total += len(e.JSON)
			}
			out = append(out, evs...)
			if (r.Limit > 0 && len(out) >= r.Limit) || (r.MaxBytes > 0 && total >= r.MaxBytes) {
				return out, nil
			}
		}
		if !more {
			return out, nil
		}
	}
}

// withDeltas merges into evs, the rows a read of chunk's seqs found in the
// events table (at most limit of them and budget bytes), the delta log's
// events of chunk (of owner, unless ""), and keeps only chunk's seqs.
func withDeltas(side *DeltaLog, evs []agent.Encoded, chunk []int64, limit, budget int, owner string) ([]agent.Encoded, error) {
	end := ReadEnd(evs, limit, budget, math.MaxInt64)
	if end < math.MaxInt64 {
		i, _ := slices.BinarySearch(chunk, end+1)
		chunk = chunk[:i]
	}
	kept := evs[:0]
	for _, e := range evs {
		if _, ok := slices.BinarySearch(chunk, e.Seq); ok {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(chunk) {
		return Page(kept, limit, budget), nil
	}
	deltas, err := side.BySeqs(chunk, owner)
	if err != nil {
		return nil, err
	}
	return Page(Merge(kept, deltas, math.MaxInt64), limit, budget), nil
}
