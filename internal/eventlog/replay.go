package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// The replay of one key's events (seq, payload of each row) is the
// hottest read: a subscriber that resumes from far back reads it page
// after page, a row per event. On SQLite it runs on a pool of its own over
// sqlitedrv (ReplayPool), whose Each steps the statement and hands over
// each row's columns in SQLite's memory: no driver.Value per column, no
// database/sql conversion, and the payloads are copied into a few shared
// chunks instead of a string each (the store then reads the id from the
// payload as a view of those bytes: an event of a replayed page costs no
// allocation of its own). The store's BenchmarkEncodedReplayPage measures
// it against the gorm path.

// replayPoolSize caps the replay pool: a replay reads one page at a time.
const replayPoolSize = 4

// ReplayPool is the SQLite replay reader: a query-only pool over
// sqlitedrv.
type ReplayPool struct{ db *sql.DB }

// OpenReplayPool opens the replay pool on the SQLite file of dsn (a
// query-only DSN).
func OpenReplayPool(dsn string) (*ReplayPool, error) {
	db, err := sql.Open(sqlitedrv.DriverName, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(replayPoolSize)
	db.SetMaxIdleConns(replayPoolSize)
	return &ReplayPool{db: db}, nil
}

// Close closes the pool.
func (p *ReplayPool) Close() error { return p.db.Close() }

// Stats are the statement counters of a connection of the pool (the one
// a caller that reads one page at a time is served by): a test's view of
// what the replay compiles.
func (p *ReplayPool) Stats(ctx context.Context) (sqlitedrv.Stats, error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return sqlitedrv.Stats{}, err
	}
	defer conn.Close()
	var st sqlitedrv.Stats
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlitedrv.Conn)
		if !ok {
			return errNotDriver
		}
		st = c.Stats()
		return nil
	})
	return st, err
}

// replayChunk is the size of the chunks a page's payloads are copied into:
// the allocator's largest small size (a larger chunk is a large object,
// zeroed and taken from the heap each time). A payload over a quarter of
// it gets its own.
const replayChunk = 32 << 10

// payloadArena copies payloads out of SQLite's memory into shared chunks.
// The bytes are never written again (an event's JSON is read-only), so
// each event's JSON, and its id, are views of them.
type payloadArena struct{ buf []byte }

func (a *payloadArena) copy(p []byte) []byte {
	if len(p) > replayChunk/4 {
		return append(make([]byte, 0, len(p)), p...)
	}
	if cap(a.buf)-len(a.buf) < len(p) {
		a.buf = make([]byte, 0, replayChunk)
	}
	n := len(a.buf)
	a.buf = append(a.buf, p...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

// Payloads runs query (it selects seq, payload) and hands each row to row,
// its payload copied out of SQLite's memory (never written again: row may
// keep it). It stops once the payloads reach maxBytes (> 0), after the
// row that reaches it.
func (p *ReplayPool) Payloads(ctx context.Context, maxBytes int, query string, args []any, row func(seq int64, payload []byte) error) error {
	for i, a := range args {
		if n, ok := a.(int); ok {
			args[i] = int64(n) // a driver value
		}
	}
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var (
		arena payloadArena
		total int
	)
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlitedrv.Conn)
		if !ok {
			return errNotDriver
		}
		return c.Each(ctx, query, args, func(r sqlitedrv.Row) error {
			seq := r.Int64(0)
			if r.Null(1) {
				return fmt.Errorf("seq %d: NULL payload", seq)
			}
			raw := arena.copy(r.Text(1))
			if err := row(seq, raw); err != nil {
				return err
			}
			if total += len(raw); maxBytes > 0 && total >= maxBytes {
				return sqlitedrv.ErrStop
			}
			return nil
		})
	})
}

// errNotDriver: a connection of the pool is not sqlitedrv's.
var errNotDriver = errors.New("replay pool: not a sqlitedrv connection")

// RunSeqs is Runs.Seqs on the replay pool: a replay's page reads its rows
// of the index without a copy of each.
func (p *ReplayPool) RunSeqs(ctx context.Context, k *Runs, id string, after int64, want int) (seqs []int64, more bool, err error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlitedrv.Conn)
		if !ok {
			return errNotDriver
		}
		return c.Each(ctx, k.RunsSQL(), []any{id, after}, func(r sqlitedrv.Row) error {
			if want > 0 && len(seqs) >= want {
				more = true
				return sqlitedrv.ErrStop
			}
			var err error
			seqs, err = AppendRun(seqs, r.Int64(0), r.Text(1), after)
			return err
		})
	})
	return seqs, more, err
}
