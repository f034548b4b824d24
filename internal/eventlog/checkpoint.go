package eventlog

import (
	"database/sql"
	"sync/atomic"
	"time"
)

// checkpointGap is the least time between two WAL checkpoints: a
// checkpoint then copies what some hundreds of commits wrote, each page
// once. A page that many commits touch (an index's right edge, each
// owner's leaf of idx_event_owner_seq; when this was measured also each
// stream's leaf of the conversation index, which event_conversation has
// replaced) is copied once per gap, so a longer gap copies fewer pages:
// 250 ms against 50 cut agentik's CPU in the bench's mix by
// 6 % (21.1, 22.0, 22.4 against 23.2, 23.7, 23.4 % of 2 cores, alternated,
// quiet) and the people scenario's 100-user cost from 1.08×, 1.05× to
// 1.01×, 1.03× (docs/BENCHMARKS.md, session 9).
const checkpointGap = 250 * time.Millisecond

// walRestartFrames is the WAL length, in frames, past which the writer
// finishes a checkpoint itself so that the WAL starts over: about 32 MiB
// of 4 KiB pages. Each start-over stalls the writer for three fsyncs (the
// tail checkpoint syncs the WAL and the database, and the first commit
// after it syncs the new WAL header), so it is 8× SQLite's own
// wal_autocheckpoint default of 1000: at the mix's 5,000 events/s the WAL
// grows by some 10,000 frames a second, and 1000 made the writer stall ten
// times a second (BenchmarkAppendPaced: 32–41 tails, 0.9–1.3 s of writer
// stall in 6 s under load; 4–6 tails, 0.16–0.27 s with 8192). Readers
// search only the frames not yet checkpointed, so a longer WAL does not
// slow them.
const walRestartFrames = 8192

// Checkpointer moves most of SQLite's WAL checkpointing off the writer. By
// default SQLite checkpoints inside the commit that grows the WAL past 1000
// pages, so that one Append waits for a few thousand page copies (the
// writer's p99) and everything queued behind it waits too. The writer's
// connection has wal_autocheckpoint off; after each commit it kicks this
// goroutine, which runs a PASSIVE checkpoint on its own connection, at most
// once per checkpointGap. PASSIVE never blocks the writer or a reader.
//
// The WAL starts over from its beginning only at a commit that follows a
// checkpoint which copied all of it, and under a steady load commits land
// while this one runs: the WAL would grow without end. So once it is
// longer than walRestartFrames, the writer checkpoints the few frames
// committed since, between two of its transactions (tailDue).
type Checkpointer struct {
	db    *sql.DB       // its own connection
	w     *sql.DB       // the writer's, for the tail
	gap   atomic.Int64  // nanoseconds; checkpointGap, which tests shorten
	limit atomic.Int64  // walRestartFrames, which tests shorten
	kick  chan struct{} // buffered 1: a commit happened
	stop  chan struct{} // closed by Close after the writer has returned
	done  chan struct{} // closed when run returns
	runs  atomic.Int64  // checkpoints run
	tails atomic.Int64  // tails the writer checkpointed
	stall atomic.Int64  // nanoseconds the writer spent on them (benchmarks)

	tailDue atomic.Bool // the writer should checkpoint the WAL's tail
}

// NewCheckpointer starts the checkpointer of the SQLite database that
// writer (the writer's one connection, with wal_autocheckpoint off) writes,
// on db, a connection of its own that Close closes.
func NewCheckpointer(db, writer *sql.DB) *Checkpointer {
	c := &Checkpointer{db: db, w: writer, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.gap.Store(int64(checkpointGap))
	c.limit.Store(walRestartFrames)
	go c.run()
	return c
}

// Committed is called by the writer after each commit, between two of
// its transactions: it tells the checkpointer that the WAL grew, without
// blocking, and, when a checkpoint is due (tailDue), copies what the
// checkpointer left (the commits made while it ran) on the writer's own
// connection, where no commit can land meanwhile, so the next commit starts
// the WAL over.
//
// tailDue is cleared only once the tail is done: until then the
// checkpointer runs no checkpoint of its own, which would make the tail's
// fail as busy (one checkpoint at a time) and the WAL grow on.
func (c *Checkpointer) Committed() {
	if c.tailDue.Load() {
		start := time.Now()
		_, _ = c.w.Exec("PRAGMA wal_checkpoint(PASSIVE)")
		c.stall.Add(int64(time.Since(start)))
		c.tails.Add(1)
		c.tailDue.Store(false)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Checkpointer) run() {
	defer close(c.done)
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		if c.tailDue.Load() {
			continue // the writer's tail is next (see Committed)
		}
		// A failed checkpoint (a reader holds the whole WAL, the disk is
		// full) is retried at the next commit; the WAL only grows meanwhile,
		// as it would with SQLite's own checkpoints.
		var busy, frames, copied int64
		err := c.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		c.runs.Add(1)
		if err == nil && frames >= c.limit.Load() {
			c.tailDue.Store(true)
		}
		gap.Reset(time.Duration(c.gap.Load()))
		select {
		case <-c.stop:
			gap.Stop()
			return
		case <-gap.C:
		}
	}
}

// Close stops the checkpointer and closes its connection; the last
// connection to close checkpoints what is left.
func (c *Checkpointer) Close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}

// SetPace sets the least time between two checkpoints and the WAL length,
// in frames, past which the writer checkpoints the tail (tests; the
// defaults are checkpointGap and walRestartFrames).
func (c *Checkpointer) SetPace(gap time.Duration, restartFrames int64) {
	c.gap.Store(int64(gap))
	c.limit.Store(restartFrames)
}

// CheckpointStats counts what a Checkpointer did.
type CheckpointStats struct {
	Runs  int64         // its own checkpoints
	Tails int64         // the writer's tail checkpoints
	Stall time.Duration // the writer's time in them
}

// Stats reports the counters.
func (c *Checkpointer) Stats() CheckpointStats {
	return CheckpointStats{Runs: c.runs.Load(), Tails: c.tails.Load(), Stall: time.Duration(c.stall.Load())}
}
