// Package sqlitedrv is a database/sql driver for SQLite, registered as
// DriverName, that keeps each connection's prepared statements: a statement
// text is compiled once per connection and then only reset and bound again.
// glebarez/go-sqlite (the "sqlite" driver under gorm's dialector) compiles
// the text again on every Exec; for the store's writer that parse is about
// a quarter of the CPU of an event row (see docs/BENCHMARKS.md).
//
// It runs on modernc.org/sqlite/lib, the SQLite that glebarez/go-sqlite
// runs on, so both drivers share one library in one process, and it reads
// and writes values as glebarez/go-sqlite does: a time.Time is written as
// text in TimeFormat, and text read from a column declared DATE, DATETIME
// or TIMESTAMP (its sqlite3_column_decltype) is parsed back into a
// time.Time. Either driver reads what the other wrote.
//
// The DSN is glebarez's: a file name or file: URI, whose query may hold
// _pragma=… (each run as "PRAGMA …" after busy_timeout(5000), in order)
// and _txlock=deferred|immediate|exclusive (how BeginTx begins a
// read-write transaction). _time_format is refused: TimeFormat is the one
// format.
package sqlitedrv

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// DriverName is the name the driver is registered under. glebarez/go-sqlite
// has "sqlite".
const DriverName = "agentik-sqlite"

// cacheSize bounds the prepared statements one connection keeps. The
// writer's texts are a few dozen (its INSERTs per row count, gorm's
// statements per model); texts that vary with their argument count (IN
// lists) are compiled again once they were pushed out.
const cacheSize = 256

// seenMax bounds the hashes of texts compiled once and not (yet) cached: a
// text enters the cache the second time it is compiled (statement). A
// replay's sparse page carries its seqs as a literal list, a text run once:
// cached on first use, 256 of them filled each replay connection's cache
// with statements never run again (the soak's memory outside Go's heap,
// docs/BENCHMARKS.md) and pushed out the ones that are.
const seenMax = 1024

// cacheTextMax is the longest text the cache keeps. A longer one carries
// its data in the text (a replay's literal seq list is tens of KB) and is
// all but never run again: kept, 256 of them held one replay connection's
// 11 MB (the soak, docs/BENCHMARKS.md).
const cacheTextMax = 4 << 10

func init() { sql.Register(DriverName, drv{}) }

type drv struct{}

// Open opens a connection; see the package doc for the DSN.
func (drv) Open(dsn string) (driver.Conn, error) { return open(dsn) }

// Conn is one SQLite connection. database/sql uses it from one goroutine at
// a time.
type Conn struct {
	tls  *libc.TLS
	db   uintptr         // sqlite3*
	done <-chan struct{} // ends the statement that steps (see setDone)

	begin string                // the BEGIN of a read-write transaction
	stmts map[string]*statement // the cache, by text
	order []string              // cached texts, oldest first
	seen  map[uint64]struct{}   // hashes of texts compiled once, not cached (seenMax)
	stats Stats
}

// Stats counts what a connection did with its statements.
type Stats struct {
	Compiled int64 // statement texts compiled (sqlite3_prepare_v3)
	Reused   int64 // executions that took a cached statement
	Cached   int   // statements kept now
}

// Stats reports the connection's counters; a test reaches it through
// (*sql.Conn).Raw.
func (c *Conn) Stats() Stats {
	s := c.stats
	s.Cached = len(c.stmts)
	return s
}

func open(dsn string) (*Conn, error) {
	name, query := dsn, ""
	if i := strings.IndexByte(dsn, '?'); i >= 1 {
		query = dsn[i+1:]
		if !strings.HasPrefix(dsn, "file:") {
			name = dsn[:i] // SQLite reads the query of a file: URI itself
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("sqlitedrv: dsn: %w", err)
	}
	if q.Has("_time_format") {
		return nil, errors.New("sqlitedrv: dsn: _time_format is not supported")
	}
	begin := "BEGIN"
	if v := q.Get("_txlock"); v != "" {
		switch mode := strings.ToUpper(v); mode {
		case "DEFERRED", "IMMEDIATE", "EXCLUSIVE":
			begin += " " + mode
		default:
			return nil, fmt.Errorf("sqlitedrv: dsn: unknown _txlock %q", v)
		}
	}
	c := &Conn{tls: libc.NewTLS(), begin: begin, stmts: make(map[string]*statement), seen: make(map[uint64]struct{})}
	if err := c.openDB(name, q.Get("vfs")); err != nil {
		c.tls.Close()
		return nil, err
	}
	pragmas := append([]string{"busy_timeout(5000)"}, q["_pragma"]...)
	for _, p := range pragmas {
		if err := c.execOnce("PRAGMA " + p); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("sqlitedrv: pragma %s: %w", p, err)
		}
	}
	return c, nil
}

func (c *Conn) openDB(name, vfs string) error {
	cname, err := libc.CString(name)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, cname)
	var cvfs uintptr
	if vfs != "" {
		if cvfs, err = libc.CString(vfs); err != nil {
			return err
		}
		defer libc.Xfree(c.tls, cvfs)
	}
	pdb := libc.Xmalloc(c.tls, 8)
	if pdb == 0 {
		return errNoMem
	}
	defer libc.Xfree(c.tls, pdb)
	*(*uintptr)(cPtr(pdb)) = 0
	// NOMUTEX: database/sql never uses a connection from two goroutines at
	// once.
	flags := int32(lib.SQLITE_OPEN_READWRITE | lib.SQLITE_OPEN_CREATE | lib.SQLITE_OPEN_URI | lib.SQLITE_OPEN_NOMUTEX)
	rc := lib.Xsqlite3_open_v2(c.tls, cname, pdb, flags, cvfs)
	c.db = *(*uintptr)(cPtr(pdb))
	if rc != lib.SQLITE_OK {
		err := c.errorOf(rc)
		if c.db != 0 {
			lib.Xsqlite3_close_v2(c.tls, c.db)
			c.db = 0
		}
		return fmt.Errorf("sqlitedrv: open %s: %w", name, err)
	}
	lib.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	conns.Store(c.db, c)
	return nil
}

// Close finalizes the cached statements and closes the connection.
func (c *Conn) Close() error {
	if c.db == 0 {
		return nil
	}
	conns.Delete(c.db)
	for _, st := range c.stmts {
		lib.Xsqlite3_finalize(c.tls, st.p)
	}
	c.stmts, c.order, c.seen = nil, nil, nil
	var err error
	if rc := lib.Xsqlite3_close_v2(c.tls, c.db); rc != lib.SQLITE_OK {
		err = c.errorOf(rc)
	}
	c.db = 0
	c.tls.Close()
	return err
}

// progressOps is how many virtual machine instructions run between two
// checks of the context.
const progressOps = 100

// setDone is how a context cancels a statement: before each step, the
// connection takes the Done channel of the context it steps for, and a
// progress handler checks it every progressOps virtual machine
// instructions. A context that ends at any moment stops the statement
// that runs, with SQLITE_INTERRUPT; a context that cannot end costs
// nothing (no handler is set then).
func (c *Conn) setDone(done <-chan struct{}) {
	switch {
	case done == nil && c.done != nil:
		lib.Xsqlite3_progress_handler(c.tls, c.db, 0, 0, 0)
	case done != nil && c.done == nil:
		lib.Xsqlite3_progress_handler(c.tls, c.db, progressOps, progressC, c.db)
	}
	c.done = done
}

// conns finds a connection by its sqlite3* for progress.
var conns sync.Map

// progress is the progress handler: non-zero (interrupt) once the
// context of the statement running on connection db has ended.
func progress(_ *libc.TLS, db uintptr) int32 {
	v, ok := conns.Load(db)
	if !ok {
		return 0
	}
	select {
	case <-v.(*Conn).done:
		return 1
	default:
		return 0
	}
}

var progressC = cFunc(progress)

// Ping reports whether the connection is open.
func (c *Conn) Ping(context.Context) error {
	if c.db == 0 {
		return driver.ErrBadConn
	}
	return nil
}

// ExecContext runs query with args. A text of several statements runs
// them in order, each bound from the same args (as glebarez/go-sqlite
// does); such a text is not cached.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for multi := false; ; {
		st, tail, err := c.statement(query, multi)
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
		if st != nil {
			err = st.bind(args)
			if err == nil {
				_, err = st.step(ctx.Done())
			}
			st.release()
			if err != nil {
				return nil, ctxErr(ctx, err)
			}
		}
		if tail == "" {
			break
		}
		query, multi = tail, true
	}
	return result{
		lastID: lib.Xsqlite3_last_insert_rowid(c.tls, c.db),
		rows:   int64(lib.Xsqlite3_changes(c.tls, c.db)),
	}, nil
}

// execOnce runs a statement without caching it (the DSN's pragmas).
func (c *Conn) execOnce(query string) error {
	st, _, err := c.statement(query, true)
	if err != nil || st == nil {
		return err
	}
	_, err = st.step(nil)
	st.release()
	return err
}

// QueryContext runs query with args and returns its rows. The first row
// is stepped to here, so the columns are those of the statement as it runs
// (SQLite compiles a cached statement again after a schema change). In a
// text of several statements, all but the last are run first, each taking
// the next of args (as glebarez/go-sqlite does).
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for multi := false; ; {
		st, tail, err := c.statement(query, multi)
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
		if st == nil {
			if tail == "" {
				return &rows{c: c, done: true}, nil
			}
			query = tail
			continue
		}
		if err := st.bind(args); err != nil {
			st.release()
			return nil, err
		}
		row, err := st.step(ctx.Done())
		if err != nil {
			st.release()
			return nil, ctxErr(ctx, err)
		}
		if tail == "" {
			st.busy = true
			return newRows(ctx, st, row), nil
		}
		args = shift(args, len(st.params))
		st.release()
		query, multi = tail, true
	}
}

// shift drops the first n of args and numbers the rest from 1.
func shift(args []driver.NamedValue, n int) []driver.NamedValue {
	args = append([]driver.NamedValue(nil), args[min(n, len(args)):]...)
	for i := range args {
		args[i].Ordinal = i + 1
	}
	return args
}

// BeginTx begins a transaction: BEGIN with the DSN's _txlock mode, or a
// plain (deferred) BEGIN when opts.ReadOnly. Like glebarez/go-sqlite it
// does not wait on ctx (database/sql rolls back a transaction whose
// context ends).
func (c *Conn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	q := c.begin
	if opts.ReadOnly {
		q = "BEGIN"
	}
	if _, err := c.ExecContext(context.Background(), q, nil); err != nil {
		return nil, err
	}
	return tx{c}, nil
}

// Begin implements driver.Conn.
func (c *Conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

type tx struct{ c *Conn }

func (t tx) Commit() error {
	_, err := t.c.ExecContext(context.Background(), "COMMIT", nil)
	return err
}

func (t tx) Rollback() error {
	_, err := t.c.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

// Prepare implements driver.Conn: the statement runs its text through the
// connection's cache on each execution.
func (c *Conn) Prepare(query string) (driver.Stmt, error) { return prepared{c, query}, nil }

// PrepareContext implements driver.ConnPrepareContext.
func (c *Conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return prepared{c, query}, nil
}

type prepared struct {
	c     *Conn
	query string
}

func (p prepared) Close() error  { return nil }
func (p prepared) NumInput() int { return -1 }

func (p prepared) Exec(args []driver.Value) (driver.Result, error) {
	return p.c.ExecContext(context.Background(), p.query, named(args))
}

func (p prepared) Query(args []driver.Value) (driver.Rows, error) {
	return p.c.QueryContext(context.Background(), p.query, named(args))
}

func (p prepared) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return p.c.ExecContext(ctx, p.query, args)
}

func (p prepared) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return p.c.QueryContext(ctx, p.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

type result struct{ lastID, rows int64 }

func (r result) LastInsertId() (int64, error) { return r.lastID, nil }
func (r result) RowsAffected() (int64, error) { return r.rows, nil }

var (
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
)
