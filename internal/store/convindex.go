package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// The conversation index: which seqs of the log belong to a conversation.
//
// It is a table of its own, event_conversation, not an index of
// agent_event, so the writer decides when an entry is written: one row per
// run of a conversation's seqs, keyed (conversation_id, its last seq), the
// others in the row (encodeRun). An index entry written with each token of
// 100 interleaved streams dirtied a page of its own per token (a 4 KiB WAL
// frame and its checkpoint, for a ~100-byte token: the largest part of the
// store's cost per token in the mix; docs/BENCHMARKS.md).
//
// On SQLite (one process: its lock) the writer therefore defers the entries
// of text deltas (append_text): they wait in memory, per conversation, and
// are written as one row, in the transaction of the conversation's next other
// event (a turn's end, a tool call, its delete) or once convPendingMax of
// them wait. So a conversation's indexed entries are always a prefix of its
// events, and its pending ones the rest. A read of a conversation (see
// EncodedEvents) takes the pending seqs first, then the indexed ones from
// the database, and reads the pending rows by seq: whatever it reads is
// every event of the conversation through some commit at or after the read
// began, never one with a hole.
//
// What a crash loses is only memory: meta's indexed_through is a seq
// through which every entry is written (it trails the oldest pending one),
// and opening the database writes the entries of every event after it
// (recoverConvIndex). A conversation's entries never wait longer than
// convStaleSpan seqs, which bounds that scan. On PostgreSQL (several
// instances, each reading the others' events) every entry is written with
// its event, in the events' INSERT (insertPostgresSQL).

// convPendingMax is how many entries of one conversation may wait: a read
// of a running turn reads at most this many events by seq, from the delta
// log (deltalog.go) where they are text deltas committed alone. Reaching it
// costs the writer a transaction of its own; at 256, a 500-token answer
// made two, half of the bench's mix's transactions (350 of 3,750 commits
// against 175 with 1,024, counted by the writer, 2026-12-05).
const convPendingMax = 1024

// convStaleSpan is how far (in seqs) below the head a pending entry may
// fall before the writer writes its conversation's entries anyway: a
// stalled stream does not hold the watermark, and so the scan at open, back.
const convStaleSpan = 1 << 16

// convMarkStep is how far the watermark moves before the writer stores it:
// once per this many seqs, not per commit.
const convMarkStep = 4096

// metaIndexedThrough is the meta key of the watermark (decimal seq).
const metaIndexedThrough = "indexed_through"

// metaOwnerIndexedThrough is the owner index's watermark.
const metaOwnerIndexedThrough = "owner_indexed_through"

// runIndex is one table of runs of seqs by a column of agent_event: the
// conversation index (event_conversation, by conversation_id) and the
// owner index (event_owner, by owner: a member's replay of the whole log,
// whose entries 100 users' streams scattered over as many leaves of an
// index of agent_event as they are users; docs/BENCHMARKS.md, session 11).
// Both are kept as the conversation index is (see above), each with its
// own pending entries and watermark.
type runIndex struct {
	table, column, markKey string
	indexed                string // the condition on agent_event's rows of its entries
	runsSQL                string
	rangeFrom              string // a dense range of its events, after the columns
}

var (
	convRuns  = &runIndex{table: "event_conversation", column: "conversation_id", markKey: metaIndexedThrough, indexed: "conversation_id IS NOT NULL", runsSQL: convRunsSQL, rangeFrom: convRangeFrom}
	ownerRuns = &runIndex{table: "event_owner", column: "owner", markKey: metaOwnerIndexedThrough, indexed: "owner <> ''", runsSQL: ownerRunsSQL, rangeFrom: ownerRangeFrom}
)

// convIndex holds the pending entries, under mu: the writer changes them
// after a commit, Prune drops pruned ones, readers copy what they need.
// A slice in the map is never written in place but appended to (by the
// writer) or replaced.
type convIndex struct {
	key     *runIndex // which table
	mu      sync.Mutex
	pending map[string][]int64 // ascending seqs, all above the conversation's indexed ones
	mark    int64              // writer only: the stored indexed_through
	check   int64              // writer only: the seq at which finish next looks at the watermark
	// convStaleSpan and convMarkStep; tests set smaller ones before the
	// first Append.
	staleSpan, markStep int64
}

// deferEntry is one index entry the delta log's commit defers: seq under
// key (a conversation id, or an owner).
type deferEntry struct {
	key string
	seq int64
}

// deferAll adds entries, in seq order, to the pending ones, under one lock:
// the delta log's commit (applySide), whose room sideable checked, so no
// entry is written now.
func (ix *convIndex) deferAll(entries []deferEntry) {
	if ix == nil || len(entries) == 0 {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.pending == nil {
		ix.pending = make(map[string][]int64)
	}
	for _, e := range entries {
		ix.pending[e.key] = append(ix.pending[e.key], e.seq)
	}
}

// pendingAfter returns a copy of conversation cid's pending seqs above
// after.
func (ix *convIndex) pendingAfter(cid string, after int64) []int64 {
	if ix == nil {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	p := ix.pending[cid]
	i, _ := slices.BinarySearch(p, after+1)
	if i == len(p) {
		return nil
	}
	return slices.Clone(p[i:])
}

// stored returns conversation cid's pending entries (the writer's view:
// not to be written to).
func (ix *convIndex) stored(cid string) []int64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.pending[cid]
}

// forget drops the pending entries through seq top (Prune deleted their
// events).
func (ix *convIndex) forget(top int64) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for cid, p := range ix.pending {
		i, _ := slices.BinarySearch(p, top+1)
		if i == len(p) {
			delete(ix.pending, cid)
		} else if i > 0 {
			ix.pending[cid] = slices.Clone(p[i:])
		}
	}
}

// The reads of event_conversation, by its key (index_test.go checks their
// plans): a conversation's rows after a seq; the events of seqs, by seq.
const (
	convRunsSQL = "SELECT seq, seqs FROM event_conversation WHERE conversation_id = ? AND seq > ? ORDER BY seq"
	// The events of those seqs: a list of them, or a dense range (its
	// other conversations' rows read and dropped).
	convEventsSQL = "SELECT seq, payload" + eventsBySeq
	convRangeSQL  = "SELECT seq, payload" + convRangeFrom
	eventsBySeq   = " FROM agent_event WHERE seq IN "
	convRangeFrom = " FROM agent_event WHERE seq >= ? AND seq <= ? AND conversation_id = ?"
	// Prune: the rows of the events it deletes (a row's key is its
	// highest seq), found by the events.
	convPruneSQL = "DELETE FROM event_conversation WHERE (conversation_id, seq) IN (SELECT conversation_id, seq FROM agent_event WHERE seq <= ? AND conversation_id IS NOT NULL)"
	// The same of event_owner: an owner's rows after a seq, their events
	// as a dense range, and Prune's.
	ownerRunsSQL   = "SELECT seq, seqs FROM event_owner WHERE owner = ? AND seq > ? ORDER BY seq"
	ownerRangeFrom = " FROM agent_event WHERE seq >= ? AND seq <= ? AND owner = ?"
	ownerPruneSQL  = "DELETE FROM event_owner WHERE (owner, seq) IN (SELECT owner, seq FROM agent_event WHERE seq <= ? AND owner <> '')"
)

// convRun is one row of event_conversation: seqs of one conversation,
// ascending; the row's key is the last, the others are in its seqs column
// (encodeRun).
type convRun struct {
	cid  string
	seqs []int64
}

// convTx is what one writer transaction does to the conversation index;
// the in-memory state changes only when it commits (done).
type convTx struct {
	ix      *convIndex         // nil (PostgreSQL): every entry is written by the events' INSERT
	runs    []convRun          // written at the end of the transaction
	pend    map[string][]int64 // this transaction's deferred entries
	flushed map[string]bool    // conversations whose stored pending entries this transaction wrote
	mark    int64              // > 0: the watermark this transaction stored
	check   int64              // > 0: the next check (see finish)
}

// add indexes the event seq of conversation cid, deferring it if it is a
// text delta and there is room (see convIndex). An entry written now
// takes the conversation's pending ones with it, in one row; when some of
// those are from earlier commits the row is written at once, so later
// statements of the transaction (a delete's redaction) find them.
func (c *convTx) add(tx *gorm.DB, cid string, seq int64, delta bool) error {
	if c.ix == nil {
		return nil // PostgreSQL: written with the events (insertPostgresSQL)
	}
	var stored []int64
	if !c.flushed[cid] {
		stored = c.ix.stored(cid)
	}
	if delta && len(stored)+len(c.pend[cid]) < convPendingMax-1 {
		if c.pend == nil {
			c.pend = make(map[string][]int64)
		}
		c.pend[cid] = append(c.pend[cid], seq)
		return nil
	}
	run := convRun{cid, make([]int64, 0, len(stored)+len(c.pend[cid])+1)}
	run.seqs = append(append(append(run.seqs, stored...), c.pend[cid]...), seq)
	delete(c.pend, cid)
	if len(stored) == 0 {
		c.runs = append(c.runs, run)
		return nil
	}
	c.setFlushed(cid)
	return insertRuns(tx, c.ix.key, []convRun{run})
}

func (c *convTx) setFlushed(cid string) {
	if c.flushed == nil {
		c.flushed = make(map[string]bool)
	}
	c.flushed[cid] = true
}

// finish runs at the end of the transaction, before it commits: it writes
// the rows of this transaction, the pending entries that fell
// convStaleSpan behind last, and the watermark when it moved convMarkStep.
func (c *convTx) finish(tx *gorm.DB, last int64) error {
	if c.ix == nil {
		return nil
	}
	if err := insertRuns(tx, c.ix.key, c.runs); err != nil {
		return fmt.Errorf("%s: %w", c.ix.key.table, err)
	}
	if last < c.ix.check {
		return nil
	}
	c.check = last + c.ix.markStep/4
	low := last + 1 // the lowest seq pending once this commits
	var stale []convRun
	c.ix.mu.Lock()
	for cid, p := range c.ix.pending {
		if c.flushed[cid] || len(p) == 0 {
			continue
		}
		if p[0] < last-c.ix.staleSpan {
			stale = append(stale, convRun{cid, p})
			c.setFlushed(cid)
			continue
		}
		low = min(low, p[0])
	}
	c.ix.mu.Unlock()
	if err := insertRuns(tx, c.ix.key, stale); err != nil {
		return fmt.Errorf("%s: %w", c.ix.key.table, err)
	}
	for _, p := range c.pend {
		low = min(low, p[0])
	}
	if mark := low - 1; mark-c.ix.mark >= c.ix.markStep {
		if err := storeMark(tx, c.ix.key, mark); err != nil {
			return fmt.Errorf("%s watermark: %w", c.ix.key.table, err)
		}
		c.mark = mark
	}
	return nil
}

func storeMark(tx *gorm.DB, k *runIndex, mark int64) error {
	return tx.Exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		k.markKey, strconv.FormatInt(mark, 10)).Error
}

// done applies a committed transaction to the pending entries.
func (c *convTx) done() {
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
	for cid := range c.flushed {
		delete(ix.pending, cid)
	}
	for cid, p := range c.pend {
		ix.pending[cid] = append(ix.pending[cid], p...)
	}
	if c.mark > 0 {
		ix.mark = c.mark
	}
}

// encodeRun is a run's seqs column: nil for a run of one; else, as
// uvarints, the key minus the first seq, then each next seq minus the one
// before, up to (not including) the key.
func encodeRun(seqs []int64) []byte {
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

// appendRun appends to dst the seqs above after of the run with that key
// and seqs column.
func appendRun(dst []int64, key int64, b []byte, after int64) ([]int64, error) {
	if len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || int64(d) >= key {
			return dst, fmt.Errorf("conversation index: run %d: bad seqs", key)
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
				return dst, fmt.Errorf("conversation index: run %d: bad seqs", key)
			}
			seq += int64(d)
		}
	}
	if key > after {
		dst = append(dst, key)
	}
	return dst, nil
}

// insertRuns writes runs into k's table (SQLite) in multi-row INSERTs. A
// stored row is kept.
func insertRuns(tx *gorm.DB, k *runIndex, runs []convRun) error {
	if len(runs) == 0 {
		return nil
	}
	db, ctx := tx.Statement.ConnPool, rawCtx(tx) // the writer's transaction, or the migration's connection
	const chunk = 64                             // three parameters each (see sqliteInsertChunk)
	args := make([]any, 0, 3*min(chunk, len(runs)))
	for len(runs) > 0 {
		part := runs[:min(chunk, len(runs))]
		runs = runs[len(part):]
		var q strings.Builder
		q.WriteString("INSERT INTO " + k.table + " (" + k.column + ", seq, seqs) VALUES ")
		args = args[:0]
		for i, r := range part {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?)")
			var enc any // NULL for a run of one
			if b := encodeRun(r.seqs); b != nil {
				enc = b
			}
			args = append(args, r.cid, r.seqs[len(r.seqs)-1], enc)
		}
		q.WriteString(" ON CONFLICT DO NOTHING")
		if _, err := db.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// convSeqs returns the seqs above after that event_conversation holds for
// conversation cid, the rows read in order until they give want seqs
// (≤ 0: all), and whether rows are left then. The rows are stepped
// lazily, so a page reads only the rows it needs.
func convSeqs(db *gorm.DB, cid string, after int64, want int) (seqs []int64, more bool, err error) {
	return runSeqs(db, convRuns, cid, after, want)
}

// runSeqs is convSeqs of any runIndex: the seqs k's table holds for id.
func runSeqs(db *gorm.DB, k *runIndex, id string, after int64, want int) (seqs []int64, more bool, err error) {
	rows, err := db.Raw(k.runsSQL, id, after).Rows()
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
		if seqs, err = appendRun(seqs, key, b, after); err != nil {
			return nil, false, err
		}
	}
	return seqs, false, rows.Err()
}

// isDelta tells whether rec's event is a text delta, whose index entry the
// writer may defer.
func isDelta(rec *agent.Record) bool {
	e := rec.Event.Event
	return rec.Event.Kind == agent.KindConversation && e != nil && e.Type == agent.EventAppendText
}

// droppedConvIndex is the index of agent_event that event_conversation
// replaced.
const droppedConvIndex = "idx_event_conversation_seq"

// migrateConvIndex creates event_conversation; in a database from before
// it, fills it from agent_event (a row per event) and drops the index it
// replaces. On SQLite it then writes the entries a crash left pending, and
// returns the watermark it leaves (every entry through it is written).
func migrateConvIndex(tx *gorm.DB, postgres bool, side *eventlog.DeltaLog) (int64, error) {
	ddl := "CREATE TABLE IF NOT EXISTS event_conversation (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID"
	if postgres {
		ddl = "CREATE TABLE IF NOT EXISTS event_conversation (conversation_id text NOT NULL, seq bigint NOT NULL, seqs bytea, PRIMARY KEY (conversation_id, seq))"
	}
	if err := tx.Exec(ddl).Error; err != nil {
		return 0, err
	}
	if tx.Migrator().HasIndex(&eventRow{}, droppedConvIndex) {
		if err := tx.Exec("INSERT INTO event_conversation (conversation_id, seq) SELECT conversation_id, seq FROM agent_event WHERE conversation_id IS NOT NULL ON CONFLICT DO NOTHING").Error; err != nil {
			return 0, fmt.Errorf("fill event_conversation: %w", err)
		}
		if err := fillFromSide(tx, convRuns, side); err != nil {
			return 0, err
		}
		if err := tx.Exec("DROP INDEX " + droppedConvIndex).Error; err != nil {
			return 0, err
		}
		if !postgres {
			var head int64
			if err := tx.Raw("SELECT COALESCE(MAX(seq), 0) FROM agent_event").Scan(&head).Error; err != nil {
				return 0, err
			}
			if side != nil {
				head = max(head, side.Head())
			}
			return head, storeMark(tx, convRuns, head) // all written
		}
	}
	if postgres {
		return 0, nil
	}
	return recoverRuns(tx, convRuns, side)
}

// droppedOwnerIndex is the index of agent_event that event_owner replaced
// on SQLite; PostgreSQL, whose writer writes every entry with its event
// anyway, keeps it and reads by it.
const droppedOwnerIndex = "idx_event_owner_seq"

// migrateOwnerIndex keeps the owner index. On PostgreSQL that is
// droppedOwnerIndex. On SQLite it creates event_owner, and where it did not
// exist yet (a database from before it, or before accounts) fills it from
// agent_event (a row per event) and drops droppedOwnerIndex; it then writes
// the entries a crash left pending and returns the watermark it leaves.
func migrateOwnerIndex(tx *gorm.DB, postgres bool, side *eventlog.DeltaLog) (int64, error) {
	if postgres {
		return 0, tx.Exec("CREATE INDEX IF NOT EXISTS " + droppedOwnerIndex + " ON agent_event (owner, seq)").Error
	}
	if !tx.Migrator().HasTable(ownerRuns.table) {
		if err := tx.Exec("CREATE TABLE event_owner (owner TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (owner, seq)) WITHOUT ROWID").Error; err != nil {
			return 0, err
		}
		if err := tx.Exec("INSERT INTO event_owner (owner, seq) SELECT owner, seq FROM agent_event WHERE owner <> ''").Error; err != nil {
			return 0, fmt.Errorf("fill event_owner: %w", err)
		}
		if err := fillFromSide(tx, ownerRuns, side); err != nil {
			return 0, err
		}
		if err := tx.Exec("DROP INDEX IF EXISTS " + droppedOwnerIndex).Error; err != nil {
			return 0, err
		}
		var head int64
		if err := tx.Raw("SELECT COALESCE(MAX(seq), 0) FROM agent_event").Scan(&head).Error; err != nil {
			return 0, err
		}
		if side != nil {
			head = max(head, side.Head())
		}
		return head, storeMark(tx, ownerRuns, head) // all written
	}
	return recoverRuns(tx, ownerRuns, side)
}

// fillFromSide writes a row of k's for each event of the delta log (when
// an index is made anew: older databases have none).
func fillFromSide(tx *gorm.DB, k *runIndex, side *eventlog.DeltaLog) error {
	if side == nil {
		return nil
	}
	deltas, err := side.Read(0, math.MaxInt64, 0, "")
	if err != nil {
		return err
	}
	runs := make([]convRun, 0, len(deltas))
	for _, e := range deltas {
		key := e.ConversationID
		if k == ownerRuns {
			key = e.Owner
		}
		if key != "" {
			runs = append(runs, convRun{key, []int64{e.Seq}})
		}
	}
	if err := insertRuns(tx, k, runs); err != nil {
		return fmt.Errorf("fill %s: %w", k.table, err)
	}
	return nil
}

// recoverRuns writes the entries of k's of the events after its watermark
// that no row holds (those still pending when the last process stopped:
// for each conversation or owner, its events above its highest row), one
// row each, and moves the watermark to the head, which it returns. The
// events are agent_event's and the delta log's (side, if not nil).
func recoverRuns(tx *gorm.DB, k *runIndex, side *eventlog.DeltaLog) (int64, error) {
	from, err := readMark(tx, k)
	if err != nil {
		return 0, err
	}
	rows, err := tx.Raw("SELECT seq, "+k.column+" FROM agent_event WHERE seq > ? AND "+k.indexed+" ORDER BY seq", from).Rows()
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
			cid string
		)
		if err := rows.Scan(&seq, &cid); err != nil {
			rows.Close()
			return 0, err
		}
		if bySeq[cid] == nil {
			order = append(order, cid)
		}
		bySeq[cid] = append(bySeq[cid], seq)
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
		for _, e := range deltas {
			key := e.ConversationID
			if k == ownerRuns {
				key = e.Owner
			}
			if key == "" {
				continue
			}
			if bySeq[key] == nil {
				order = append(order, key)
			}
			bySeq[key] = append(bySeq[key], e.Seq)
			head = max(head, e.Seq)
		}
		if len(deltas) > 0 {
			for _, seqs := range bySeq {
				slices.Sort(seqs)
			}
		}
	}
	var runs []convRun
	for _, cid := range order {
		var top int64
		if err := tx.Raw("SELECT COALESCE(MAX(seq), 0) FROM "+k.table+" WHERE "+k.column+" = ?", cid).Scan(&top).Error; err != nil {
			return 0, err
		}
		seqs := bySeq[cid]
		i, _ := slices.BinarySearch(seqs, top+1)
		if i < len(seqs) {
			runs = append(runs, convRun{cid, seqs[i:]})
		}
	}
	if err := insertRuns(tx, k, runs); err != nil {
		return 0, fmt.Errorf("recover %s: %w", k.table, err)
	}
	if head <= from {
		return from, nil
	}
	return head, storeMark(tx, k, head)
}

// readMark returns k's stored watermark (0: none yet).
func readMark(db *gorm.DB, k *runIndex) (int64, error) {
	var mark []string
	if err := db.Raw("SELECT value FROM meta WHERE key = ?", k.markKey).Scan(&mark).Error; err != nil {
		return 0, err
	}
	if len(mark) == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(mark[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %w", k.markKey, err)
	}
	return n, nil
}

// seqList is seqs as an SQL list of integers ("1,2,3"): they are int64s,
// so no parameter is needed.
func seqList(seqs []int64) string {
	b := make([]byte, 0, 8*len(seqs))
	for i, s := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s, 10)
	}
	return string(b)
}
