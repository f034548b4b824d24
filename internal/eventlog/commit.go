package eventlog

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// Table names the events table and its columns, and where the pruned-
// through seq is kept: the store's schema, given to the engine (nothing
// here knows what the rows mean).
type Table struct {
	// Name is the events table; Columns its columns of Row's fields, in
	// Row's order (seq, id, key, created, type, payload, owner).
	Name    string
	Columns [7]string
	// Runs, on PostgreSQL, is the table of the key's index entries
	// (key column, seq), written by the statement that inserts the rows;
	// "": none.
	Runs string
	// Meta is the table of (key, value) settings and Pruned the key of
	// the highest pruned seq (decimal) in it.
	Meta, Pruned string
}

// Row is one event's row of the events table.
type Row struct {
	Seq     int64
	ID      string
	Key     *string // nil: NULL (an event of no conversation)
	Created time.Time
	Type    string
	Payload string
	Owner   string
}

// Bounds reads the pruned-through seq and the highest stored seq of t.
func (t *Table) Bounds(db *gorm.DB) (pruned, head int64, err error) {
	var r struct {
		Head   int64
		Pruned *string
	}
	if err := db.Raw("SELECT (SELECT COALESCE(MAX("+t.Columns[0]+"), 0) FROM "+t.Name+") AS head, (SELECT value FROM "+t.Meta+" WHERE key = ?) AS pruned",
		t.Pruned).Scan(&r).Error; err != nil {
		return 0, 0, fmt.Errorf("read bounds: %w", err)
	}
	if r.Pruned != nil {
		if pruned, err = strconv.ParseInt(*r.Pruned, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("read bounds: %s %q: %w", t.Pruned, *r.Pruned, err)
		}
	}
	return pruned, r.Head, nil
}

// Hooks are what the store does in and around the writer's transaction;
// R is its record. The writer calls them on its goroutine only (or, for a
// writer never started, on the one goroutine that calls Apply).
type Hooks[R any] struct {
	// Light reports whether every record of recs is cheap to apply (see
	// Writer: light requests commit first).
	Light func(recs []R) bool
	// ID is rec's event id, which a second event of the same id is
	// skipped by; lookup says whether a checked transaction looks it up
	// in the events table (an id Apply refuses anyway is not).
	ID func(rec R) (id string, lookup bool)
	// Stored gives rec, skipped, the seq its stored event has.
	Stored func(rec R, seq int64)
	// Seq is the seq the writer's transaction gave rec (0: none), Unseq
	// clears it once that transaction failed.
	Seq   func(rec R) int64
	Unseq func(rec R)
	// Begin starts an attempt of a transaction of batch: what an earlier
	// attempt learnt is dropped.
	Begin func(tx *gorm.DB, batch []*Request[R]) error
	// Apply writes rec's rows as the seq-th event of the log and returns
	// its events-table row and its encoded event; publish false: the
	// event is never published (its row is written all the same).
	Apply func(tx *gorm.DB, rec R, seq int64) (row Row, enc agent.Encoded, publish bool, err error)
	// Applied follows the records of one request.
	Applied func(tx *gorm.DB, recs []R) error
	// Finish follows the insert of the events' rows, before the commit,
	// with the last seq of the transaction.
	Finish func(tx *gorm.DB, last int64) error
	// End closes an attempt: committed through last, or rolled back.
	End func(committed bool, last int64)
	// Side, if set, commits without a transaction the requests of batch
	// it takes (the delta log), before the rest: it returns those it took
	// and their events (the writer publishes and answers them), and the
	// rest for the transaction.
	Side func(batch []*Request[R]) (took, rest []*Request[R], evs []agent.Encoded)
	// OnCommit publishes a commit's events through upTo, the highest seq
	// the commit gave or found (the on-commit hook: ordered publication).
	OnCommit func(upTo int64, evs []agent.Encoded) error
	// Committed follows every commit of the goroutine (the checkpointer).
	Committed func()
}

// Config is the writer's database and its statements' settings.
type Config struct {
	DB    *gorm.DB        // the writer's handle: one connection on SQLite
	Ctx   context.Context // the statements' context, never cancelled
	Log   *slog.Logger
	Table Table
	// Retry is the wait before a transaction that failed with a Transient
	// error runs again; it doubles on each of the RetryAttempts.
	Retry time.Duration
	// Head is the highest seq ever committed, when the writer starts.
	Head int64
	// NoLog: the records' rows are written but no events table's (a
	// database of no log); their seqs only order rows.
	NoLog bool
	// Postgres: each transaction takes the advisory lock SeqLock first
	// and reads the head inside it (several instances append to one
	// log), and notifies Channel of its last seq with Notice's payload
	// (evs: the events it publishes, which the payload may carry).
	Postgres bool
	SeqLock  int64
	Channel  string
	Notice   func(seq int64, evs []agent.Encoded) string
}

// Configure sets w's database (before Start, or the first Apply).
func (w *Writer[R]) Configure(cfg Config) {
	w.cfg = cfg
	w.last = cfg.Head
	if w.cfg.Log == nil {
		w.cfg.Log = slog.New(slog.DiscardHandler)
	}
}

// Last is the highest seq committed by this writer or found at its start
// (SQLite: the one writer's; PostgreSQL reads it in each transaction).
// The writer's goroutine only, as SetLast (a commit without a
// transaction: the delta log's).
func (w *Writer[R]) Last() int64 { return w.last }

// SetLast records that seqs through last are committed.
func (w *Writer[R]) SetLast(last int64) { w.last = last }

// Commit commits batch and answers each of its requests, as the goroutine
// does (for a benchmark's commit without the queue).
func (w *Writer[R]) Commit(batch []*Request[R]) {
	w.commitBatch(batch)
	if w.hooks.Committed != nil {
		w.hooks.Committed()
	}
}

// commitBatch writes batch in one transaction, optimistically: it does
// not look up whether an event id is stored already, and lets the unique
// index on id reject a replayed event. If that transaction fails for any
// reason, it writes each request alone, looking the ids up first (so a
// replayed event is skipped), and one bad request fails only itself. A
// transaction that fails with a Transient error is run again, looking the
// ids up, so a commit whose answer was lost is not applied twice.
func (w *Writer[R]) commitBatch(batch []*Request[R]) {
	if w.hooks.Side != nil {
		took, rest, evs := w.hooks.Side(batch)
		if len(took) > 0 {
			w.emit(evs, took)
			for _, r := range took {
				r.Answer(nil)
			}
		}
		if batch = rest; len(batch) == 0 {
			return
		}
	}
	evs, err := w.applyRetry(batch, false)
	if err == nil {
		w.emit(evs, batch)
		for _, r := range batch {
			r.Answer(nil)
		}
		return
	}
	w.Stats.Split++
	for i, r := range batch {
		evs, err := w.applyRetry(batch[i:i+1], true)
		if err != nil {
			for _, rec := range r.Recs {
				w.hooks.Unseq(rec)
			}
			r.Answer(err)
			continue
		}
		w.emit(evs, batch[i:i+1])
		r.Answer(nil)
	}
}

// emit publishes a commit's events (OnCommit) through the highest seq of
// the batch's records: a retried transaction finds the events an earlier
// attempt committed already, and those are published from the log.
func (w *Writer[R]) emit(evs []agent.Encoded, batch []*Request[R]) {
	w.Stats.Batches++
	w.Stats.Records += int64(len(evs))
	var upTo int64
	if len(evs) > 0 {
		upTo = evs[len(evs)-1].Seq
	}
	for _, r := range batch {
		for _, rec := range r.Recs {
			upTo = max(upTo, w.hooks.Seq(rec))
		}
	}
	if upTo == 0 || w.hooks.OnCommit == nil {
		return
	}
	if err := w.hooks.OnCommit(upTo, evs); err != nil {
		w.cfg.Log.Error("publish_deferred", "err", err, "through_seq", upTo)
	}
}

// applyRetry is Apply, run again (checked, after a backoff) while it
// fails with a transient error (Retry).
func (w *Writer[R]) applyRetry(batch []*Request[R], checked bool) ([]agent.Encoded, error) {
	return Retry(w.cfg.Retry, w.cfg.Log, func(again bool) ([]agent.Encoded, error) {
		return w.Apply(batch, checked || again)
	})
}

// idChunk is how many ids one "id IN (…)" lookup carries.
const idChunk = 500

// Apply runs one transaction for batch and returns the events it stored,
// in seq order, each encoded once: those bytes are stored and published.
// With checked, it first looks up which event ids are stored and skips
// those events; without, a stored id fails the transaction. The seq
// counter moves only when the transaction commits, so a rolled-back batch
// leaves no gap. The writer's goroutine calls it; a writer never started
// is applied by its caller, one at a time (Hold).
func (w *Writer[R]) Apply(batch []*Request[R], checked bool) ([]agent.Encoded, error) {
	h := &w.hooks
	var (
		evs  []agent.Encoded
		last int64
	)
	err := w.cfg.DB.WithContext(w.cfg.Ctx).Transaction(func(tx *gorm.DB) error {
		evs = evs[:0]
		if err := h.Begin(tx, batch); err != nil {
			return err
		}
		seq := w.last
		if w.cfg.Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", w.cfg.SeqLock).Error; err != nil {
				return fmt.Errorf("seq lock: %w", err)
			}
			pruned, head, err := w.cfg.Table.Bounds(tx)
			if err != nil {
				return err
			}
			seq = max(pruned, head)
		}
		stored := make(map[string]int64, len(batch))
		if checked {
			if err := w.storedIDs(tx, batch, stored); err != nil {
				return err
			}
		}
		rows := make([]Row, 0, len(batch))
		for _, r := range batch {
			for _, rec := range r.Recs {
				id, _ := h.ID(rec)
				if have, ok := stored[id]; ok && id != "" {
					h.Stored(rec, have)
					continue
				}
				seq++
				row, enc, publish, err := h.Apply(tx, rec, seq)
				if err != nil {
					return err
				}
				stored[id] = seq
				rows = append(rows, row)
				if publish {
					evs = append(evs, enc)
				}
			}
			if err := h.Applied(tx, r.Recs); err != nil {
				return err
			}
		}
		if len(rows) > 0 && !w.cfg.NoLog {
			if err := w.insert(tx, rows); err != nil {
				return fmt.Errorf("insert events: %w", err)
			}
			if err := h.Finish(tx, seq); err != nil {
				return err
			}
			if w.cfg.Postgres {
				// Delivered on commit, to every instance's listener.
				if err := tx.Exec("SELECT pg_notify(?, ?)", w.cfg.Channel, w.cfg.Notice(seq, evs)).Error; err != nil {
					return fmt.Errorf("notify: %w", err)
				}
			}
		}
		last = seq
		return nil
	})
	if err != nil {
		h.End(false, 0)
		return nil, err
	}
	w.last = last
	h.End(true, last)
	return evs, nil
}

// storedIDs adds to stored the seqs of the batch's event ids that are
// stored already.
func (w *Writer[R]) storedIDs(tx *gorm.DB, batch []*Request[R], stored map[string]int64) error {
	var ids []string
	for _, r := range batch {
		for _, rec := range r.Recs {
			if id, lookup := w.hooks.ID(rec); lookup {
				ids = append(ids, id)
			}
		}
	}
	t := &w.cfg.Table
	for len(ids) > 0 {
		chunk := ids[:min(idChunk, len(ids))]
		ids = ids[len(chunk):]
		var found []struct {
			ID  string
			Seq int64
		}
		if err := tx.Table(t.Name).Select(t.Columns[1]+" AS id, "+t.Columns[0]+" AS seq").Where(t.Columns[1]+" IN ?", chunk).Scan(&found).Error; err != nil {
			return fmt.Errorf("look up event ids: %w", err)
		}
		for _, f := range found {
			stored[f.ID] = f.Seq
		}
	}
	return nil
}

// SQLiteInsertChunk is how many event rows one INSERT carries on SQLite:
// 7 parameters each, far under SQLite's limit of 32766. The driver finds
// each parameter's argument by a scan of all the arguments (quadratic in
// their number), so statements stay small; a group commit at the mix's
// pace (under 32 rows) is one statement.
const SQLiteInsertChunk = 32

// insert writes rows in tx, in as few statements as the database takes
// well. The statements are built here: gorm's CreateInBatches spends its
// time in reflection.
//
// On SQLite it is one INSERT OR FAIL per SQLiteInsertChunk rows, its text
// kept per row count (insertText). A plain multi-row INSERT (ON CONFLICT
// ABORT) may fail halfway through, so SQLite keeps a statement journal of
// every page it touches to undo it alone (spilled to a temp file above 16
// pages: a write(2) per page). With FAIL a conflict stops the statement
// without undoing its earlier rows, so no journal is kept; the writer rolls
// the whole transaction back on any error anyway.
//
// On PostgreSQL it is one INSERT of unnest()ed arrays (insertPostgres).
func (w *Writer[R]) insert(tx *gorm.DB, rows []Row) error {
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return fmt.Errorf("writer transaction is a %T, not *sql.Tx", tx.Statement.ConnPool)
	}
	if w.cfg.Postgres {
		return w.insertPostgres(sqlTx, rows)
	}
	args := w.insertArgs[:0]
	defer func() { clear(args); w.insertArgs = args[:0] }() // no payload kept alive
	for len(rows) > 0 {
		chunk := rows[:min(SQLiteInsertChunk, len(rows))]
		rows = rows[len(chunk):]
		args = args[:0]
		for i := range chunk {
			r := &chunk[i]
			var key any // a nil *string would be bound by reflection
			if r.Key != nil {
				key = *r.Key
			}
			args = append(args, r.Seq, r.ID, key, r.Created, r.Type, r.Payload, r.Owner)
		}
		if _, err := sqlTx.ExecContext(w.cfg.Ctx, w.insertText(len(chunk)), args...); err != nil {
			return err
		}
	}
	return nil
}

// insertText is the SQLite INSERT of n event rows, built once per n (at
// most SQLiteInsertChunk of them) and kept by the writer.
func (w *Writer[R]) insertText(n int) string {
	if w.insertSQL == nil {
		w.insertSQL = make([]string, SQLiteInsertChunk+1)
	}
	if q := w.insertSQL[n]; q != "" {
		return q
	}
	var q strings.Builder
	q.WriteString("INSERT OR FAIL INTO " + w.cfg.Table.Name + " (" + strings.Join(w.cfg.Table.Columns[:], ", ") + ") VALUES ")
	for i := range n {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?,?,?)")
	}
	w.insertSQL[n] = q.String()
	return w.insertSQL[n]
}

// postgresText is the PostgreSQL INSERT of event rows given as one array
// per column, and of their key index entries (Table.Runs): one statement
// text for any number of rows, so pgx prepares it once per connection and
// every commit only binds its seven arrays.
func (t *Table) postgresText() string {
	ins := "INSERT INTO " + t.Name + " (" + strings.Join(t.Columns[:], ", ") + ") " +
		"SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[])"
	if t.Runs == "" {
		return ins
	}
	key, seq := t.Columns[2], t.Columns[0]
	return "WITH e AS (" + ins + " RETURNING " + key + ", " + seq + ") " +
		"INSERT INTO " + t.Runs + " (" + key + ", " + seq + ") SELECT " + key + ", " + seq + " FROM e WHERE " + key + " IS NOT NULL ON CONFLICT DO NOTHING"
}

// PostgresInsertBytes bounds the payload bytes of one PostgreSQL INSERT
// (its message may not pass 1 GiB): a batch of large events takes several.
const PostgresInsertBytes = 64 << 20

// insertPostgres writes rows with the Table's postgresText, as few
// statements as PostgresInsertBytes allows.
func (w *Writer[R]) insertPostgres(tx *sql.Tx, rows []Row) error {
	if w.pgInsert == "" {
		w.pgInsert = w.cfg.Table.postgresText()
	}
	for len(rows) > 0 {
		n, size := 0, 0
		for n < len(rows) && (n == 0 || size+len(rows[n].Payload) <= PostgresInsertBytes) {
			size += len(rows[n].Payload)
			n++
		}
		chunk := rows[:n]
		rows = rows[n:]
		var (
			seq     = make([]int64, n)
			id      = make([]string, n)
			key     = make([]*string, n) // nil: NULL
			created = make([]time.Time, n)
			typ     = make([]string, n)
			payload = make([]string, n)
			owner   = make([]string, n)
		)
		for i := range chunk {
			r := &chunk[i]
			seq[i], id[i], key[i], created[i], typ[i], payload[i], owner[i] = r.Seq, r.ID, r.Key, r.Created, r.Type, r.Payload, r.Owner
		}
		if _, err := tx.ExecContext(w.cfg.Ctx, w.pgInsert, seq, id, key, created, typ, payload, owner); err != nil {
			return err
		}
	}
	return nil
}
