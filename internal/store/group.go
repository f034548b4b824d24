package store

import (
	"runtime"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// groupWait bounds how long the writer holds a batch open for more
// requests (see writer).
const groupWait = 500 * time.Microsecond

// heavyPerCommit caps the heavy records (see light) of one transaction.
// A heavy record runs its own statements (a message row, its search
// document, working memory, the conversation's row): ~0.3–1 ms each, 30×
// a token's row. When 100 turns start together, one transaction of their
// user messages took 24–41 ms in the mix, and every token queued behind it
// waited that long: half of the mix's 1 % slowest tokens were those
// (docs/BENCHMARKS.md, "Wave 3, session 7"). 16 of them take a few
// milliseconds; the tokens queued meanwhile are committed before the next
// 16.
const heavyPerCommit = 16

// writer is the one goroutine that writes. It takes whatever is queued (up
// to maxBatch records) and commits it, then publishes, answers, and
// repeats until Close closes the queue and it is empty.
//
// A commit costs about as much as a dozen small events (measured with
// BenchmarkAppendPaced), so while many appenders are active the writer
// waits, at most groupWait, until its batch holds as many requests as the
// previous one did: the appenders it just answered are about to queue
// their next events. A lone appender (the previous batch held one
// request) never waits, nor does a batch that is as large already.
//
// Light requests go first (see splitBatch): a batch's light requests are
// one transaction, committed and published before its heavy ones, and
// the heavy ones are committed heavyPerCommit records at a time, with what
// was queued meanwhile gathered (its light requests first again) before
// the next of them. Requests of one batch are concurrent Appends, which
// have no order among them; each request's records stay in order and in
// one transaction.
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*request, 0, 64)
	var light, heavy []*request // heavy: waiting for a transaction, in queue order
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	prev := 0 // requests in the previous batch
	open := true
	for open || len(heavy) > 0 {
		taken := time.Now()
		n := 0
		if len(heavy) == 0 {
			r, ok := <-s.reqs
			if !ok {
				break
			}
			batch = append(batch, r)
			n = len(r.recs)
			// Let the appenders that were just answered (and are runnable)
			// queue their next records first: bigger batches, fewer
			// transactions. With nothing else runnable this returns at once.
			runtime.Gosched()
		}
		timing := false
	drain:
		for open && n < maxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, r)
				n += len(r.recs)
				continue
			default:
			}
			if len(batch) >= prev || len(heavy) > 0 {
				break // heavy requests wait already: take only what is queued
			}
			if !timing {
				timing = true
				wait.Reset(groupWait)
			}
			select {
			case r, ok := <-s.reqs:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, r)
				n += len(r.recs)
			case <-wait.C:
				timing = false
				prev = 0 // drain what is queued, then commit
			}
		}
		if timing {
			wait.Stop()
		}
		if len(batch) > 0 {
			prev = len(batch)
		}
		light, heavy = splitBatch(batch, light[:0], heavy)
		s.stats.gather += int64(time.Since(taken))
		if len(light) > 0 {
			s.commitOne(light)
		}
		if len(heavy) > 0 {
			k := heavyTake(heavy)
			s.commitOne(heavy[:k])
			clear(heavy[:k])
			heavy = append(heavy[:0], heavy[k:]...)
		}
		clear(light)
		clear(batch)
		batch = batch[:0]
	}
}

// commitOne commits one transaction's requests and lets the checkpointer
// know.
func (s *Store) commitOne(batch []*request) {
	s.commit(batch)
	if s.ckpt != nil {
		s.ckpt.Committed()
	}
}

// splitBatch appends batch's light requests to light and its heavy ones
// to heavy, each in batch's order.
func splitBatch(batch, light, heavy []*request) ([]*request, []*request) {
	for _, r := range batch {
		if isLight(r) {
			light = append(light, r)
		} else {
			heavy = append(heavy, r)
		}
	}
	return light, heavy
}

// heavyTake is how many of heavy's first requests make one transaction:
// at least one, and no more than heavyPerCommit records once past the
// first (a request is never split).
func heavyTake(heavy []*request) int {
	k, recs := 1, len(heavy[0].recs)
	for k < len(heavy) && recs+len(heavy[k].recs) <= heavyPerCommit {
		recs += len(heavy[k].recs)
		k++
	}
	return k
}

// isLight reports whether every record of r is an event alone: a
// conversation event that is not a message, with nothing else to apply
// (a streamed token, a tool call's progress). Such a record is one
// agent_event row. The split is about cost only: a request taken for heavy
// is applied exactly as a light one would be.
func isLight(r *request) bool {
	for _, rec := range r.recs {
		if rec.Event.Kind != agent.KindConversation || rec.Event.Event == nil || rec.Event.Event.Message != nil ||
			rec.Conversation != nil || rec.Memory != nil || rec.ReplaceMemory || rec.StaleMemory || rec.Context != nil ||
			rec.Turn != agent.TurnNone || rec.Source != "" || rec.AutoTitle || rec.Enqueue != nil || rec.Dequeue != "" ||
			rec.Wait != nil || rec.Decide != nil || rec.Resolve != "" || rec.EndWait || rec.Elicit != nil || rec.Head != nil {
			return false
		}
	}
	return true
}
