package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// The replay of one conversation (seq, payload of each row) is the hottest
// read: a subscriber that resumes from far back reads it page after page,
// a row per event. On SQLite it runs on a pool of its own over sqlitedrv
// (eventPool), whose Each steps the statement and hands over each row's
// columns in SQLite's memory: no driver.Value per column, no database/sql
// conversion, and the payloads are copied into a few shared chunks instead
// of a string each. The id is read from the payload as a view of those
// bytes, and the inner type of the common events is a constant
// (agent.StoredEvent): an event of a replayed page costs no allocation of
// its own. BenchmarkEncodedReplayPage measures it against the gorm path
// (Options.gormReplay).

// eventPoolSize caps the event pool: a replay reads one page at a time.
const eventPoolSize = 4

// openEventPool opens the event pool on the SQLite file of dsn (the read
// pool's DSN: query_only).
func openEventPool(dsn string) (*sql.DB, error) {
	db, err := sql.Open(sqlitedrv.DriverName, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(eventPoolSize)
	db.SetMaxIdleConns(eventPoolSize)
	return db, nil
}

// eventChunk is the size of the chunks a page's payloads are copied into:
// the allocator's largest small size (a larger chunk is a large object,
// zeroed and taken from the heap each time). A payload over a quarter of
// it gets its own.
const eventChunk = 32 << 10

// payloadArena copies payloads out of SQLite's memory into shared chunks.
// The bytes are never written again (Encoded's JSON is read-only), so
// each event's JSON, and its id, are views of them.
type payloadArena struct{ buf []byte }

func (a *payloadArena) copy(p []byte) []byte {
	if len(p) > eventChunk/4 {
		return append(make([]byte, 0, len(p)), p...)
	}
	if cap(a.buf)-len(a.buf) < len(p) {
		a.buf = make([]byte, 0, eventChunk)
	}
	n := len(a.buf)
	a.buf = append(a.buf, p...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

// scanPayloads is scanEvents for a query of one conversation (known.both:
// it selects seq, payload), on the event pool.
func (s *Store) scanPayloads(ctx context.Context, known eventKnown, size, maxBytes int, query string, args ...any) ([]agent.Encoded, error) {
	for i, a := range args {
		if n, ok := a.(int); ok {
			args[i] = int64(n) // a driver value
		}
	}
	conn, err := s.ev.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var (
		out   = make([]agent.Encoded, 0, size)
		arena payloadArena
		total int
	)
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlitedrv.Conn)
		if !ok {
			return errors.New("event pool: not a sqlitedrv connection")
		}
		return c.Each(ctx, query, args, func(r sqlitedrv.Row) error {
			seq := r.Int64(0)
			if r.Null(1) {
				return fmt.Errorf("seq %d: NULL payload", seq)
			}
			raw := arena.copy(r.Text(1))
			id, err := payloadID(raw)
			if err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			e := agent.StoredEvent(seq, id, known.kind, known.conversationID, raw)
			e.Owner = known.owner
			out = append(out, e)
			if total += len(raw); maxBytes > 0 && total >= maxBytes {
				return sqlitedrv.ErrStop
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// indexSeqs is runSeqs on the event pool where there is one: a replay's
// page reads its rows of the index without a copy of each.
func (s *Store) indexSeqs(ctx context.Context, k *runIndex, id string, after int64, want int) (seqs []int64, more bool, err error) {
	if s.ev == nil {
		return runSeqs(s.r.WithContext(ctx), k, id, after, want)
	}
	conn, err := s.ev.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlitedrv.Conn)
		if !ok {
			return errors.New("event pool: not a sqlitedrv connection")
		}
		return c.Each(ctx, k.RunsSQL(), []any{id, after}, func(r sqlitedrv.Row) error {
			if want > 0 && len(seqs) >= want {
				more = true
				return sqlitedrv.ErrStop
			}
			var err error
			seqs, err = eventlog.AppendRun(seqs, r.Int64(0), r.Text(1), after)
			return err
		})
	})
	return seqs, more, err
}
