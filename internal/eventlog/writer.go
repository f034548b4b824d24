package eventlog

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
)

// QueueSize is how many Append calls may wait for the writer at once. When
// the queue is full, Append blocks (until its ctx ends): producers feel
// back-pressure instead of the store holding unbounded memory. 1024 is far
// above the number of concurrently running turns.
const QueueSize = 1024

// MaxBatch caps the records of one group-commit transaction (one request is
// never split, so a batch can exceed it by the size of its last request). It
// keeps a transaction short, so an Append's wait stays in milliseconds.
const MaxBatch = 512

// GroupWait bounds how long the writer holds a batch open for more
// requests (see Writer).
const GroupWait = 500 * time.Microsecond

// HeavyPerCommit caps the heavy records (not Light) of one transaction.
// A heavy record runs its own statements (a message row, its search
// document, working memory, the conversation's row): ~0.3–1 ms each, 30×
// a token's row. When 100 turns start together, one transaction of their
// user messages took 24–41 ms in the mix, and every token queued behind it
// waited that long: half of the mix's 1 % slowest tokens were those. 16 of
// them take a few milliseconds; the tokens queued meanwhile are committed
// before the next 16.
const HeavyPerCommit = 16

// ErrClosed is Append's error once Close has been called.
var ErrClosed = errors.New("the writer is closed")

// Request is one Append call waiting for the writer: its records, committed
// in order and in one transaction, and the answer's channel.
type Request[R any] struct {
	Recs []R
	done chan error // buffered: the writer never blocks on an answer
}

// NewRequest is a request of recs that is not queued (a commit run on the
// caller's goroutine, a benchmark's); Answer's error is Wait's.
func NewRequest[R any](recs []R) *Request[R] {
	return &Request[R]{Recs: recs, done: make(chan error, 1)}
}

// Answer tells r's caller its records' outcome; once per request.
func (r *Request[R]) Answer(err error) { r.done <- err }

// Wait is the answer of r.
func (r *Request[R]) Wait() error { return <-r.done }

// WriterStats counts what the writer committed; read by tests and
// benchmarks, written by the writer's goroutine.
type WriterStats struct {
	Batches, Records int64 // committed
	Split            int64 // batches that failed and were retried request by request
	Gather           int64 // nanoseconds from taking a batch's first request to its commit
}

// Writer is the group commit: the one goroutine that writes. Append puts
// a caller's records on a bounded queue (QueueSize) and waits for their
// answer; the goroutine takes whatever is queued (up to MaxBatch records)
// and commits it (Commit: a transaction of the store's Hooks, commit.go),
// answers every request, then repeats until Close closes the queue and it
// is empty.
//
// A commit costs about as much as a dozen small events (measured with the
// store's BenchmarkAppendPaced), so while many appenders are active the
// writer waits, at most GroupWait, until its batch holds as many requests
// as the previous one did: the appenders it just answered are about to
// queue their next events. A lone appender (the previous batch held one
// request) never waits, nor does a batch that is as large already.
//
// Light requests go first (Hooks.Light says which): a batch's light requests are
// one commit, before its heavy ones, and the heavy ones are committed
// HeavyPerCommit records at a time, with what was queued meanwhile
// gathered (its light requests first again) before the next of them.
// Requests of one batch are concurrent Appends, which have no order among
// them; each request's records stay in order and in one commit.
type Writer[R any] struct {
	hooks Hooks[R]
	cfg   Config
	last  int64 // see Last

	// insertSQL[n] is the SQLite INSERT of n event rows (insertText),
	// insertArgs its arguments' slice, reused; pgInsert PostgreSQL's.
	insertSQL  []string
	insertArgs []any
	pgInsert   string
	// CommitDeltas', reused from commit to commit.
	deltas                    []Delta
	convEntries, ownerEntries []RunEntry
	seen                      map[string]int64

	reqs     chan *Request[R]
	requests sync.Pool // of *Request[R]: one per streamed token

	mu      sync.RWMutex // guards closed against sends on reqs
	closed  bool
	started bool
	done    chan struct{} // closed when the goroutine has returned

	// Stats is the writer goroutine's.
	Stats WriterStats
}

// NewWriter returns a Writer that commits with hooks; Configure gives it
// its database.
func NewWriter[R any](hooks Hooks[R]) *Writer[R] {
	w := &Writer[R]{hooks: hooks, reqs: make(chan *Request[R], QueueSize), done: make(chan struct{})}
	w.requests.New = func() any { return &Request[R]{done: make(chan error, 1)} }
	return w
}

// Start starts the writer's goroutine. A Writer never started takes no
// Append (its callers commit on their own goroutine, holding Hold).
func (w *Writer[R]) Start() {
	w.started = true
	go w.run()
}

// Append commits recs through the writer and returns commit's answer. ctx
// bounds only the wait for a place in the queue: once queued, the call
// waits for its outcome, which is then the truth about the data.
func (w *Writer[R]) Append(ctx context.Context, recs []R) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := w.requests.Get().(*Request[R])
	r.Recs = recs
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		w.put(r)
		return ErrClosed
	}
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		w.mu.RUnlock()
		w.put(r)
		return ctx.Err()
	}
	w.mu.RUnlock()
	err := <-r.done
	w.put(r) // answered: the writer no longer holds it
	return err
}

func (w *Writer[R]) put(r *Request[R]) {
	r.Recs = nil
	w.requests.Put(r)
}

// Hold keeps Close waiting until release is called, or reports false when
// the writer is closed: a commit on the caller's goroutine runs under it.
func (w *Writer[R]) Hold() (release func(), ok bool) {
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return nil, false
	}
	return w.mu.RUnlock, true
}

// Queued is how many requests wait in the queue (tests).
func (w *Writer[R]) Queued() int { return len(w.reqs) }

// Close stops accepting appends, lets the goroutine commit everything
// already queued and waits for it. It reports false when the writer was
// closed already.
func (w *Writer[R]) Close() bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.closed = true
	close(w.reqs)
	w.mu.Unlock()
	if w.started {
		<-w.done
	}
	return true
}

// run is the writer's goroutine (see Writer).
func (w *Writer[R]) run() {
	defer close(w.done)
	batch := make([]*Request[R], 0, 64)
	var light, heavy []*Request[R] // heavy: waiting for a commit, in queue order
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	prev := 0 // requests in the previous batch
	open := true
	for open || len(heavy) > 0 {
		taken := time.Now()
		n := 0
		if len(heavy) == 0 {
			r, ok := <-w.reqs
			if !ok {
				break
			}
			batch = append(batch, r)
			n = len(r.Recs)
			// Let the appenders that were just answered (and are runnable)
			// queue their next records first: bigger batches, fewer
			// transactions. With nothing else runnable this returns at once.
			runtime.Gosched()
		}
		timing := false
	drain:
		for open && n < MaxBatch {
			select {
			case r, ok := <-w.reqs:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, r)
				n += len(r.Recs)
				continue
			default:
			}
			if len(batch) >= prev || len(heavy) > 0 {
				break // heavy requests wait already: take only what is queued
			}
			if !timing {
				timing = true
				wait.Reset(GroupWait)
			}
			select {
			case r, ok := <-w.reqs:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, r)
				n += len(r.Recs)
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
		light, heavy = w.split(batch, light[:0], heavy)
		w.Stats.Gather += int64(time.Since(taken))
		if len(light) > 0 {
			w.Commit(light)
		}
		if len(heavy) > 0 {
			k := heavyTake(heavy)
			w.Commit(heavy[:k])
			clear(heavy[:k])
			heavy = append(heavy[:0], heavy[k:]...)
		}
		clear(light)
		clear(batch)
		batch = batch[:0]
	}
}

// split appends batch's light requests to light and its heavy ones to
// heavy, each in batch's order.
func (w *Writer[R]) split(batch, light, heavy []*Request[R]) ([]*Request[R], []*Request[R]) {
	for _, r := range batch {
		if w.hooks.Light(r.Recs) {
			light = append(light, r)
		} else {
			heavy = append(heavy, r)
		}
	}
	return light, heavy
}

// heavyTake is how many of heavy's first requests make one commit: at
// least one, and no more than HeavyPerCommit records once past the first
// (a request is never split).
func heavyTake[R any](heavy []*Request[R]) int {
	k, recs := 1, len(heavy[0].Recs)
	for k < len(heavy) && recs+len(heavy[k].Recs) <= HeavyPerCommit {
		recs += len(heavy[k].Recs)
		k++
	}
	return k
}
