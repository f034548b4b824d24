package eventlog

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentik/agentik/internal/agent"
)

// The run indexes: which seqs of the log belong to a key (a conversation,
// an owner), kept as a table of their own, not an index of the events'
// table, so the writer decides when an entry is written: one row per run
// of a key's seqs, keyed (key, its last seq), the others in the row
// (EncodeRun). An index entry written with each token of 100 interleaved
// streams dirtied a page of its own per token (a 4 KiB WAL frame and its
// checkpoint, for a ~100-byte token: the largest part of the store's cost
// per token in the mix; docs/BENCHMARKS.md).
//
// On SQLite (one process: its lock) the writer therefore defers the
// entries it may (text deltas): they wait in memory, per key (RunIndex),
// and are written as one row, in the transaction of the key's next other
// event or once PendingMax of them wait. So a key's indexed entries are
// always a prefix of its events, and its pending ones the rest. A read of
// a key takes the pending seqs first (PendingAfter), then the indexed ones
// from the database (Runs.Seqs), and reads the events by seq: whatever it
// reads is every event of the key through some commit at or after the
// read began, never one with a hole.
//
// What a crash loses is only memory: a watermark in the store's meta table
// is a seq through which every entry is written (it trails the oldest
// pending one), and opening the database writes the entries of every event
// after it (Recover). A key's entries never wait longer than StaleSpan
// seqs, which bounds that scan. On PostgreSQL (several instances, each
// reading the others' events) the store writes every entry with its event
// and keeps no RunIndex (a nil one: nothing pending).

// PendingMax is how many entries of one key may wait: a read of a running
// turn reads at most this many events by seq, from the delta log where
// they are text deltas committed alone. Reaching it costs the writer a
// transaction of its own; at 256, a 500-token answer made two, half of the
// bench's mix's transactions (350 of 3,750 commits against 175 with 1,024,
// counted by the writer, 2026-12-05).
const PendingMax = 1024

// StaleSpan is how far (in seqs) below the head a pending entry may fall
// before the writer writes its key's entries anyway: a stalled stream does
// not hold the watermark, and so the scan at open, back.
const StaleSpan = 1 << 16

// MarkStep is how far the watermark moves before the writer stores it:
// once per this many seqs, not per commit.
const MarkStep = 4096

// DB is a connection as the engine uses it: the writer's transaction, a
// migration's connection or a pool, with SQLite's ? placeholders.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Query runs a query in the caller's dialect (on PostgreSQL the store's
// ? placeholders become $n).
type Query func(query string, args ...any) (*sql.Rows, error)

// Runs names one run index's table and what it indexes; the store defines
// its indexes with NewRuns.
type Runs struct {
	Table   string // its table: (Column, seq, seqs), keyed (Column, seq)
	Column  string // the key's column, in Table and in Events
	Events  string // the events' table
	Indexed string // the condition on Events' rows that have an entry
	MarkKey string // the meta key of its watermark (decimal seq)
	// Key is a delta log record's key ("": none).
	Key func(e *agent.Encoded) string

	runsSQL string
}

// NewRuns returns the run index r describes.
func NewRuns(r Runs) *Runs {
	r.runsSQL = "SELECT seq, seqs FROM " + r.Table + " WHERE " + r.Column + " = ? AND seq > ? ORDER BY seq"
	return &r
}

// RunsSQL is the read of a key's rows after a seq (parameters: the key,
// the seq), in seq order: a row's last seq and its seqs column, for
// AppendRun.
func (k *Runs) RunsSQL() string { return k.runsSQL }

// Run is one row of a run index: seqs of one key, ascending; the row's key
// is the last, the others are in its seqs column (EncodeRun).
type Run struct {
	Key  string
	Seqs []int64
}

// RunEntry is one index entry the delta log's commit defers: Seq under Key.
type RunEntry struct {
	Key string
	Seq int64
}

// RunIndex holds a run index's pending entries, under mu: the writer
// changes them after a commit, a prune drops pruned ones, readers copy
// what they need. A slice in the map is never written in place but
// appended to (by the writer) or replaced. A nil RunIndex has nothing
// pending and writes nothing (PostgreSQL).
type RunIndex struct {
	key     *Runs // which table
	mu      sync.Mutex
	pending map[string][]int64 // ascending seqs, all above the key's indexed ones
	mark    int64              // writer only: the stored watermark
	check   int64              // writer only: the seq at which Finish next looks at the watermark
	// StaleSpan and MarkStep; tests set smaller ones before the first
	// commit (SetSpans).
	staleSpan, markStep int64
}

// NewRunIndex returns k's pending entries, none yet, with the watermark
// mark stored (Recover's).
func NewRunIndex(k *Runs, mark int64) *RunIndex {
	return &RunIndex{key: k, mark: mark, staleSpan: StaleSpan, markStep: MarkStep}
}

// SetSpans replaces StaleSpan and MarkStep (tests, before the first commit).
func (ix *RunIndex) SetSpans(stale, step int64) { ix.staleSpan, ix.markStep = stale, step }

// Defer adds entries, in seq order, to the pending ones, under one lock:
// the delta log's commit, whose room the caller checked (Waiting), so no
// entry is written now.
func (ix *RunIndex) Defer(entries []RunEntry) {
	if ix == nil || len(entries) == 0 {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.pending == nil {
		ix.pending = make(map[string][]int64)
	}
	for _, e := range entries {
		ix.pending[e.Key] = append(ix.pending[e.Key], e.Seq)
	}
}

// PendingAfter returns a copy of key's pending seqs above after.
func (ix *RunIndex) PendingAfter(key string, after int64) []int64 {
	if ix == nil {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	p := ix.pending[key]
	i, _ := slices.BinarySearch(p, after+1)
	if i == len(p) {
		return nil
	}
	return slices.Clone(p[i:])
}

// Waiting returns how many of key's entries wait (the writer's view).
func (ix *RunIndex) Waiting(key string) int {
	if ix == nil {
		return 0
	}
	return len(ix.stored(key))
}

// stored returns key's pending entries (the writer's view: not to be
// written to).
func (ix *RunIndex) stored(key string) []int64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.pending[key]
}

// Forget drops the pending entries through seq top (a prune deleted their
// events).
func (ix *RunIndex) Forget(top int64) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for key, p := range ix.pending {
		i, _ := slices.BinarySearch(p, top+1)
		if i == len(p) {
			delete(ix.pending, key)
		} else if i > 0 {
			ix.pending[key] = slices.Clone(p[i:])
		}
	}
}

// Begin starts what one writer transaction does to the index.
func (ix *RunIndex) Begin() *RunTx { return &RunTx{ix: ix} }

// RunTx is what one writer transaction does to a run index; the in-memory
// state changes only when it commits (Done).
type RunTx struct {
	ix      *RunIndex          // nil (PostgreSQL): every entry is written by the store with its event
	runs    []Run              // written at the end of the transaction
	pend    map[string][]int64 // this transaction's deferred entries
	flushed map[string]bool    // keys whose stored pending entries this transaction wrote
	mark    int64              // > 0: the watermark this transaction stored
	check   int64              // > 0: the next check (see Finish)
}

// Add indexes the event seq under key, deferring it if it may wait
// (deferrable: a text delta) and there is room. An entry written now takes
// the key's pending ones with it, in one row; when some of those are from
// earlier commits the row is written at once, so later statements of the
// transaction (a delete's redaction) find them.
func (c *RunTx) Add(ctx context.Context, db DB, key string, seq int64, deferrable bool) error {
	if c.ix == nil {
		return nil
	}
	var stored []int64
	if !c.flushed[key] {
		stored = c.ix.stored(key)
	}
	if deferrable && len(stored)+len(c.pend[key]) < PendingMax-1 {
		if c.pend == nil {
			c.pend = make(map[string][]int64)
		}
		c.pend[key] = append(c.pend[key], seq)
		return nil
	}
	run := Run{key, make([]int64, 0, len(stored)+len(c.pend[key])+1)}
	run.Seqs = append(append(append(run.Seqs, stored...), c.pend[key]...), seq)
	delete(c.pend, key)
	if len(stored) == 0 {
		c.runs = append(c.runs, run)
		return nil
	}
	c.setFlushed(key)
	return InsertRuns(ctx, db, c.ix.key, []Run{run})
}

func (c *RunTx) setFlushed(key string) {
	if c.flushed == nil {
		c.flushed = make(map[string]bool)
	}
	c.flushed[key] = true
}

// Finish runs at the end of the transaction, before it commits, last its
// highest seq: it writes the rows of this transaction, the pending entries
// that fell StaleSpan behind last, and the watermark when it moved
// MarkStep.
func (c *RunTx) Finish(ctx context.Context, db DB, last int64) error {
	if c.ix == nil {
		return nil
	}
	if err := InsertRuns(ctx, db, c.ix.key, c.runs); err != nil {
		return fmt.Errorf("%s: %w", c.ix.key.Table, err)
	}
	if last < c.ix.check {
		return nil
	}
	c.check = last + c.ix.markStep/4
	low := last + 1 // the lowest seq pending once this commits
	var stale []Run
	c.ix.mu.Lock()
	for key, p := range c.ix.pending {
		if c.flushed[key] || len(p) == 0 {
			continue
		}
		if p[0] < last-c.ix.staleSpan {
			stale = append(stale, Run{key, p})
			c.setFlushed(key)
			continue
		}
		low = min(low, p[0])
	}
	c.ix.mu.Unlock()
	if err := InsertRuns(ctx, db, c.ix.key, stale); err != nil {
		return fmt.Errorf("%s: %w", c.ix.key.Table, err)
	}
	for _, p := range c.pend {
		low = min(low, p[0])
	}
	if mark := low - 1; mark-c.ix.mark >= c.ix.markStep {
		if err := StoreMark(ctx, db, c.ix.key, mark); err != nil {
			return fmt.Errorf("%s watermark: %w", c.ix.key.Table, err)
		}
		c.mark = mark
	}
	return nil
}

// Done applies a committed transaction to the pending entries.
func (c *RunTx) Done() {
	if c.ix == nil {
		return
	}
	ix := c.ix
	if c.check > 0 {
		ix.check = c.check // writer only, like mark
	}
	if len(c.flushed) == 0 && len(c.pend) == 0 && c.mark == 0 {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.pending == nil {
		ix.pending = make(map[string][]int64)
	}
	for key := range c.flushed {
		delete(ix.pending, key)
	}
	for key, p := range c.pend {
		ix.pending[key] = append(ix.pending[key], p...)
	}
	if c.mark > 0 {
		ix.mark = c.mark
	}
}

// StoreMark stores k's watermark.
func StoreMark(ctx context.Context, db DB, k *Runs, mark int64) error {
	_, err := db.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		k.MarkKey, strconv.FormatInt(mark, 10))
	return err
}

// ReadMark returns k's stored watermark (0: none yet).
func ReadMark(ctx context.Context, db DB, k *Runs) (int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT value FROM meta WHERE key = ?", k.MarkKey)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var mark []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		mark = append(mark, v)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(mark) == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(mark[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", k.MarkKey, err)
	}
	return n, nil
}

// EncodeRun is a run's seqs column: nil for a run of one; else, as
// uvarints, the key minus the first seq, then each next seq minus the one
// before, up to (not including) the key.
func EncodeRun(seqs []int64) []byte {
	if len(seqs) < 2 {
		return nil
	}
	key := seqs[len(seqs)-1]
	b := make([]byte, 0, 2*len(seqs))
	b = binary.AppendUvarint(b, uint64(key-seqs[0]))
	for i := 1; i < len(seqs)-1; i++ {
		b = binary.AppendUvarint(b, uint64(seqs[i]-seqs[i-1]))
	}
	return b
}

// AppendRun appends to dst the seqs above after of the run with that key
// and seqs column.
func AppendRun(dst []int64, key int64, b []byte, after int64) ([]int64, error) {
	if len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || int64(d) >= key {
			return dst, fmt.Errorf("run index: run %d: bad seqs", key)
		}
		seq := key - int64(d)
		for {
			if seq > after {
				dst = append(dst, seq)
			}
			b = b[n:]
			if len(b) == 0 {
				break
			}
			if d, n = binary.Uvarint(b); n <= 0 || seq+int64(d) >= key {
				return dst, fmt.Errorf("run index: run %d: bad seqs", key)
			}
			seq += int64(d)
		}
	}
	if key > after {
		dst = append(dst, key)
	}
	return dst, nil
}

// InsertRuns writes runs into k's table (SQLite) in multi-row INSERTs. A
// stored row is kept.
func InsertRuns(ctx context.Context, db DB, k *Runs, runs []Run) error {
	if len(runs) == 0 {
		return nil
	}
	const chunk = 64 // three parameters each
	args := make([]any, 0, 3*min(chunk, len(runs)))
	for len(runs) > 0 {
		part := runs[:min(chunk, len(runs))]
		runs = runs[len(part):]
		var q strings.Builder
		q.WriteString("INSERT INTO " + k.Table + " (" + k.Column + ", seq, seqs) VALUES ")
		args = args[:0]
		for i, r := range part {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?)")
			var enc any // NULL for a run of one
			if b := EncodeRun(r.Seqs); b != nil {
				enc = b
			}
			args = append(args, r.Key, r.Seqs[len(r.Seqs)-1], enc)
		}
		q.WriteString(" ON CONFLICT DO NOTHING")
		if _, err := db.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// Seqs returns the seqs above after that k's table holds for id, the rows
// read in order (by query) until they give want seqs (≤ 0: all), and
// whether rows are left then. The rows are stepped lazily, so a page reads
// only the rows it needs.
func (k *Runs) Seqs(query Query, id string, after int64, want int) (seqs []int64, more bool, err error) {
	rows, err := query(k.runsSQL, id, after)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var (
		key int64
		b   []byte
	)
	for rows.Next() {
		if want > 0 && len(seqs) >= want {
			return seqs, true, nil
		}
		if err := rows.Scan(&key, &b); err != nil {
			return nil, false, err
		}
		if seqs, err = AppendRun(seqs, key, b, after); err != nil {
			return nil, false, err
		}
	}
	return seqs, false, rows.Err()
}

// FillFromDeltas writes a row of k's for each event of the delta log side
// (when an index is made anew: older databases have none).
func FillFromDeltas(ctx context.Context, db DB, k *Runs, side *DeltaLog) error {
	if side == nil {
		return nil
	}
	deltas, err := side.Read(0, math.MaxInt64, 0, "")
	if err != nil {
		return err
	}
	runs := make([]Run, 0, len(deltas))
	for i := range deltas {
		if key := k.Key(&deltas[i]); key != "" {
			runs = append(runs, Run{key, []int64{deltas[i].Seq}})
		}
	}
	if err := InsertRuns(ctx, db, k, runs); err != nil {
		return fmt.Errorf("fill %s: %w", k.Table, err)
	}
	return nil
}

// Recover writes the entries of k's of the events after its watermark
// that no row holds (those still pending when the last process stopped:
// for each key, its events above its highest row), one row each, and
// moves the watermark to the head, which it returns. The events are
// k.Events' and the delta log's (side, if not nil).
func Recover(ctx context.Context, db DB, k *Runs, side *DeltaLog) (int64, error) {
	from, err := ReadMark(ctx, db, k)
	if err != nil {
		return 0, err
	}
	rows, err := db.QueryContext(ctx, "SELECT seq, "+k.Column+" FROM "+k.Events+" WHERE seq > ? AND "+k.Indexed+" ORDER BY seq", from)
	if err != nil {
		return 0, err
	}
	var (
		order []string
		bySeq = map[string][]int64{}
		head  = from
	)
	for rows.Next() {
		var (
			seq int64
			key string
		)
		if err := rows.Scan(&seq, &key); err != nil {
			rows.Close()
			return 0, err
		}
		if bySeq[key] == nil {
			order = append(order, key)
		}
		bySeq[key] = append(bySeq[key], seq)
		head = seq
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if side != nil {
		deltas, err := side.Read(from, math.MaxInt64, 0, "")
		if err != nil {
			return 0, err
		}
		for i := range deltas {
			key := k.Key(&deltas[i])
			if key == "" {
				continue
			}
			if bySeq[key] == nil {
				order = append(order, key)
			}
			bySeq[key] = append(bySeq[key], deltas[i].Seq)
			head = max(head, deltas[i].Seq)
		}
		if len(deltas) > 0 {
			for _, seqs := range bySeq {
				slices.Sort(seqs)
			}
		}
	}
	var runs []Run
	for _, key := range order {
		var top int64
		err := func() error {
			rows, err := db.QueryContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM "+k.Table+" WHERE "+k.Column+" = ?", key)
			if err != nil {
				return err
			}
			defer rows.Close()
			if rows.Next() {
				if err := rows.Scan(&top); err != nil {
					return err
				}
			}
			return rows.Err()
		}()
		if err != nil {
			return 0, err
		}
		seqs := bySeq[key]
		i, _ := slices.BinarySearch(seqs, top+1)
		if i < len(seqs) {
			runs = append(runs, Run{key, seqs[i:]})
		}
	}
	if err := InsertRuns(ctx, db, k, runs); err != nil {
		return 0, fmt.Errorf("recover %s: %w", k.Table, err)
	}
	if head <= from {
		return from, nil
	}
	return head, StoreMark(ctx, db, k, head)
}
