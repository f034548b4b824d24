package sqlitedrv_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite" // "sqlite", the driver sqlitedrv must agree with
	"github.com/google/go-cmp/cmp"
	lib "modernc.org/sqlite/lib"

	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// The store's pragmas, as in store.sqlitePragmas.
const pragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// both opens the file at path with sqlitedrv and with glebarez/go-sqlite,
// one connection each.
func both(t *testing.T, path string) (ours, theirs *sql.DB) {
	t.Helper()
	dsn := "file:" + path + "?" + pragmas
	ours = open(t, sqlitedrv.DriverName, dsn)
	theirs = open(t, "sqlite", dsn)
	return ours, theirs
}

func open(t *testing.T, name, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) sql.Result {
	t.Helper()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

// stats are the counters of db's one connection.
func stats(t *testing.T, db *sql.DB) sqlitedrv.Stats {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var s sqlitedrv.Stats
	if err := conn.Raw(func(dc any) error {
		s = dc.(*sqlitedrv.Conn).Stats()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func dbPath(t *testing.T) string { return filepath.Join(t.TempDir(), "t.db") }

// Times written by either driver are stored as the same text and read
// back, by either, as the same time.Time from columns declared DATE,
// DATETIME or TIMESTAMP, and as that text from a TEXT column.
func TestTimeRoundTrip(t *testing.T) {
	ours, theirs := both(t, dbPath(t))
	exec(t, ours, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT, at datetime, d DATE, ts timestamp, txt text)")
	zone := time.FixedZone("x", 5*3600+30*60)
	times := []time.Time{
		time.Date(2026, 12, 1, 22, 33, 44, 123456789, time.UTC),
		time.Date(2026, 12, 1, 22, 33, 44, 0, time.UTC),
		time.Date(2026, 12, 1, 22, 33, 44, 120000000, zone),
		time.Date(1999, 1, 2, 3, 4, 5, 6000, time.FixedZone("y", -8*3600)),
		time.Now().UTC().Truncate(time.Microsecond),
	}
	dbs := map[string]*sql.DB{"ours": ours, "glebarez": theirs}
	id := 0
	for _, at := range times {
		ids := map[string]int{}
		for w, db := range dbs {
			id++
			ids[w] = id
			exec(t, db, "INSERT INTO t (id, w, at, d, ts, txt) VALUES (?, ?, ?, ?, ?, ?)", id, w, at, at, at, at)
		}
		var texts []string
		for _, w := range []string{"ours", "glebarez"} {
			var s string
			if err := theirs.QueryRow("SELECT at || '' FROM t WHERE id = ?", ids[w]).Scan(&s); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, s)
		}
		if texts[0] != texts[1] || texts[0] != at.Format(sqlitedrv.TimeFormat) {
			t.Errorf("%v stored as %q (sqlitedrv) and %q (glebarez), want %q", at, texts[0], texts[1], at.Format(sqlitedrv.TimeFormat))
		}
		for w, wid := range ids {
			for r, db := range dbs {
				var got [3]any
				var txt any
				if err := db.QueryRow("SELECT at, d, ts, txt FROM t WHERE id = ?", wid).Scan(&got[0], &got[1], &got[2], &txt); err != nil {
					t.Fatal(err)
				}
				for i, g := range got {
					gt, ok := g.(time.Time)
					if !ok || !gt.Equal(at) || gt.Format(sqlitedrv.TimeFormat) != at.Format(sqlitedrv.TimeFormat) {
						t.Errorf("written by %s, read by %s: column %d is %#v, want %v", w, r, i, g, at)
					}
				}
				if txt != at.Format(sqlitedrv.TimeFormat) {
					t.Errorf("written by %s, read by %s: text column is %#v", w, r, txt)
				}
				var scanned time.Time // what gorm does with a time.Time field
				if err := db.QueryRow("SELECT at FROM t WHERE id = ?", wid).Scan(&scanned); err != nil || !scanned.Equal(at) {
					t.Errorf("written by %s, read by %s into a time.Time: %v, %v", w, r, scanned, err)
				}
			}
		}
	}
}

// Every text form glebarez/go-sqlite reads as a time, sqlitedrv reads as
// the same time, and text that is no time stays text in both.
func TestTimeTexts(t *testing.T) {
	ours, theirs := both(t, dbPath(t))
	exec(t, ours, "CREATE TABLE t (id INTEGER PRIMARY KEY, at DATETIME)")
	texts := []string{
		"2026-12-01 22:33:44.5+01:00", "2026-12-01T22:33:44.5-07:00", "2026-12-01 22:33:44.123", "2026-12-01T22:33:44",
		"2026-12-01 22:33:44Z", "2026-12-01 22:33", "2026-12-01T22:33", "2026-12-01",
		time.Date(2026, 12, 1, 1, 2, 3, 4, time.UTC).String(), time.Now().String(), "yesterday", "",
	}
	for i, s := range texts {
		exec(t, theirs, "INSERT INTO t (id, at) VALUES (?, ?)", i, s)
	}
	for i, s := range texts {
		var a, b any
		if err := ours.QueryRow("SELECT at FROM t WHERE id = ?", i).Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := theirs.QueryRow("SELECT at FROM t WHERE id = ?", i).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(b, a); diff != "" {
			t.Errorf("%q: sqlitedrv differs from glebarez (-glebarez +sqlitedrv):\n%s", s, diff)
		}
	}
}

// Values of every type database/sql passes, NULLs among them, are stored
// alike by both drivers and read back alike.
func TestValues(t *testing.T) {
	ours, theirs := both(t, dbPath(t))
	exec(t, ours, "CREATE TABLE t (id INTEGER PRIMARY KEY, w TEXT, i INTEGER, f REAL, b NUMERIC, s TEXT, e TEXT, bl BLOB, eb BLOB, nb BLOB, ns TEXT, np TEXT, n)")
	var nilStr *string
	args := []any{int64(math.MinInt64), 2.5, true, "zwölf \x00 nul", "", []byte{0, 1, 2}, []byte{}, []byte(nil), nil, nilStr, int32(7)}
	for i, db := range []*sql.DB{ours, theirs} {
		exec(t, db, "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", append([]any{i, "w"}, args...)...)
	}
	exec(t, ours, "INSERT INTO t (id, b) VALUES (?, ?)", 2, false)
	read := func(db *sql.DB, id int) ([]any, []string) {
		var row [11]any
		ptrs := make([]any, len(row))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := db.QueryRow("SELECT i, f, b, s, e, bl, eb, nb, ns, np, n FROM t WHERE id = ?", id).Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var types string
		if err := db.QueryRow("SELECT typeof(i)||typeof(f)||typeof(b)||typeof(s)||typeof(e)||typeof(bl)||typeof(eb)||typeof(nb)||typeof(ns)||typeof(np)||typeof(n) FROM t WHERE id = ?", id).Scan(&types); err != nil {
			t.Fatal(err)
		}
		return row[:], []string{types}
	}
	want := []any{int64(math.MinInt64), 2.5, int64(1), "zwölf \x00 nul", "", []byte{0, 1, 2}, []byte(nil), nil, nil, nil, int64(7)}
	wantTypes := []string{"integer" + "real" + "integer" + "text" + "text" + "blob" + "blob" + "null" + "null" + "null" + "integer"}
	for _, id := range []int{0, 1} {
		for name, db := range map[string]*sql.DB{"sqlitedrv": ours, "glebarez": theirs} {
			got, types := read(db, id)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("row %d read by %s (-want +got):\n%s", id, name, diff)
			}
			if diff := cmp.Diff(wantTypes, types); diff != "" {
				t.Errorf("row %d read by %s: storage classes (-want +got):\n%s", id, name, diff)
			}
		}
	}
	var b bool
	if err := ours.QueryRow("SELECT b FROM t WHERE id = 2").Scan(&b); err != nil || b {
		t.Errorf("false read back as %v, %v", b, err)
	}
	var ns sql.NullString
	if err := ours.QueryRow("SELECT ns FROM t WHERE id = 0").Scan(&ns); err != nil || ns.Valid {
		t.Errorf("NULL read back as %+v, %v", ns, err)
	}
	if _, err := ours.Exec("INSERT INTO t (id) VALUES (?)", struct{}{}); err == nil {
		t.Error("a struct argument was taken")
	}
}

// Named and numbered parameters find their arguments.
func TestParameters(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	var a, b, c string
	if err := ours.QueryRow("SELECT ?2, :x, ?1", "one", "two", sql.Named("x", "ex")).Scan(&a, &b, &c); err != nil {
		t.Fatal(err)
	}
	if a != "two" || b != "ex" || c != "one" {
		t.Errorf("got %q %q %q", a, b, c)
	}
	if _, err := ours.Exec("SELECT ?, ?", 1); err == nil {
		t.Error("a missing argument was taken as NULL")
	}
}

// Results: LastInsertId, RowsAffected, RETURNING, several statements in
// one Exec.
func TestResults(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	exec(t, ours, "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)")
	res := exec(t, ours, "INSERT INTO t (v) VALUES (?), (?)", "a", "b")
	if id, _ := res.LastInsertId(); id != 2 {
		t.Errorf("LastInsertId %d, want 2", id)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("RowsAffected %d, want 2", n)
	}
	var id int64
	var v string
	if err := ours.QueryRow("INSERT INTO t (v) VALUES (?) RETURNING id, v", "c").Scan(&id, &v); err != nil || id != 3 || v != "c" {
		t.Errorf("RETURNING gave %d %q %v", id, v, err)
	}
	res = exec(t, ours, "UPDATE t SET v = v || ? WHERE id > ?", "!", 1)
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("RowsAffected of the update %d, want 2", n)
	}
	exec(t, ours, "INSERT INTO t (v) VALUES ('x'); INSERT INTO t (v) VALUES (?);", "y")
	var n int
	if err := ours.QueryRow("SELECT count(*) FROM t WHERE v IN ('x', 'y')").Scan(&n); err != nil || n != 2 {
		t.Errorf("after an Exec of two statements: %d rows, %v", n, err)
	}
	rows, err := ours.Query("SELECT id FROM t WHERE 0")
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Error("a row of an empty result")
	}
	if err := rows.Close(); err != nil {
		t.Error(err)
	}
}

// A statement text is compiled twice per connection (it is cached on its
// second compile): its next executions take it from the cache, also inside
// transactions.
func TestStatementCache(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	exec(t, ours, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
	before := stats(t, ours)
	for i := range 10 {
		tx, err := ours.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO t (id, v) VALUES (?, ?)", i, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := tx.QueryRow("SELECT v FROM t WHERE id = ?", i).Scan(&v); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("read %q, %v", v, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	got := stats(t, ours)
	// BEGIN IMMEDIATE, the INSERT, the SELECT, COMMIT: twice each.
	if c := got.Compiled - before.Compiled; c != 8 {
		t.Errorf("%d statements compiled for 10 transactions, want 8", c)
	}
	if r := got.Reused - before.Reused; r != 32 {
		t.Errorf("%d cached statements taken, want 32", r)
	}
}

// A text whose cached statement is busy (its rows are open) runs on a
// statement of its own; both read their own rows.
func TestBusyStatement(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	exec(t, ours, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
	exec(t, ours, "INSERT INTO t VALUES (1), (2), (3)")
	tx, err := ours.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = "SELECT id FROM t WHERE id >= ? ORDER BY id"
	outer, err := tx.Query(q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for outer.Next() {
		var id int
		if err := outer.Scan(&id); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRow(q, 3).Scan(&n); err != nil || n != 3 {
			t.Fatalf("inner query: %d, %v", n, err)
		}
		got = append(got, id)
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, got); diff != "" {
		t.Errorf("outer rows (-want +got):\n%s", diff)
	}
}

// The cache keeps at most its bound, finalizing the oldest statements.
func TestCacheBound(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	for i := range 300 {
		for range 2 { // a text is cached on its second compile
			var n int
			if err := ours.QueryRow(fmt.Sprintf("SELECT %d", i)).Scan(&n); err != nil || n != i {
				t.Fatalf("SELECT %d: %d, %v", i, n, err)
			}
		}
	}
	if s := stats(t, ours); s.Cached != 256 {
		t.Errorf("%d statements cached, want 256", s.Cached)
	}
	var n int
	if err := ours.QueryRow("SELECT 0").Scan(&n); err != nil || n != 0 {
		t.Errorf("an evicted text again: %d, %v", n, err)
	}
}

// A text longer than the cache's bound (a literal list) runs but is not
// kept: one-off texts do not fill the cache.
func TestLongTextNotCached(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	long := "SELECT count(*) FROM (SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 300) + ")"
	for range 2 {
		var n int
		if err := ours.QueryRow(long).Scan(&n); err != nil || n != 301 {
			t.Fatalf("the long text: %d, %v", n, err)
		}
	}
	s := stats(t, ours)
	if s.Cached != 0 || s.Reused != 0 {
		t.Errorf("the long text: %d cached, %d reused; want neither", s.Cached, s.Reused)
	}
	for range 2 {
		var n int
		if err := ours.QueryRow("SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if s := stats(t, ours); s.Cached != 1 {
		t.Errorf("a short text run twice: %d cached, want 1", s.Cached)
	}
}

// A text run once is not cached, however many such texts run (a replay's
// literal seq lists): the cache keeps what runs again, and what runs
// again is taken from it.
func TestTextRunOnceNotCached(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	const again = "SELECT 7"
	run := func(q string, want int) {
		t.Helper()
		var n int
		if err := ours.QueryRow(q).Scan(&n); err != nil || n != want {
			t.Fatalf("%s: %d, %v", q, n, err)
		}
	}
	run(again, 7)
	run(again, 7)
	for i := range 1000 {
		run(fmt.Sprintf("SELECT count(*) FROM (SELECT 1) WHERE %d IN (%d, %d, %d)", i, i-1, i, i+1), 1)
	}
	if s := stats(t, ours); s.Cached != 1 {
		t.Errorf("%d statements cached after 1000 texts run once, want 1 (the text run twice)", s.Cached)
	}
	before := stats(t, ours)
	run(again, 7)
	if s := stats(t, ours); s.Reused != before.Reused+1 || s.Compiled != before.Compiled {
		t.Errorf("the text run twice, again: %+v after %+v; want it taken from the cache", s, before)
	}
}

// A cached statement follows a change of the schema: its columns are
// those of the table now.
func TestSchemaChange(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	exec(t, ours, "CREATE TABLE t (a TEXT)")
	exec(t, ours, "INSERT INTO t VALUES ('x')")
	columns := func() []string {
		rows, err := ours.Query("SELECT * FROM t")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	if diff := cmp.Diff([]string{"a"}, columns()); diff != "" {
		t.Fatal(diff)
	}
	exec(t, ours, "ALTER TABLE t ADD COLUMN at DATETIME")
	exec(t, ours, "UPDATE t SET at = ?", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if diff := cmp.Diff([]string{"a", "at"}, columns()); diff != "" {
		t.Error(diff)
	}
	var at any
	if err := ours.QueryRow("SELECT at FROM t").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if _, ok := at.(time.Time); !ok {
		t.Errorf("the new DATETIME column read as %#v", at)
	}
}

// A context that ends stops the statement that runs (an endless one
// here), with an error that is the context's; the connection works on.
func TestCancel(t *testing.T) {
	ours := open(t, sqlitedrv.DriverName, "file:"+dbPath(t)+"?"+pragmas)
	const endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"

	// Ended after the driver looked at it: only the running statement
	// can notice.
	conn, err := ours.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Raw(func(dc any) error {
		ctx := &endsAfterCheck{Context: t.Context()}
		ctx.inner, ctx.cancel = context.WithCancel(t.Context())
		_, err := dc.(driver.QueryerContext).QueryContext(ctx, endless, nil)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("endless query with a context that ended while it ran: %v", err)
	}
	var e *sqlitedrv.Error
	if !errors.As(err, &e) || e.Code() != lib.SQLITE_INTERRUPT {
		t.Errorf("the error %v is not SQLite's interrupt", err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}

	// Through database/sql, ended from another goroutine.
	ctx, cancel := context.WithCancel(t.Context())
	go cancel()
	var n int
	if err := ours.QueryRowContext(ctx, endless).Scan(&n); !errors.Is(err, context.Canceled) {
		t.Errorf("endless query, cancelled: %d, %v", n, err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	go cancel()
	if _, err := ours.ExecContext(ctx, "CREATE TABLE t AS "+endless); !errors.Is(err, context.Canceled) {
		t.Errorf("endless exec, cancelled: %v", err)
	}
	if err := ours.QueryRow("SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
		t.Errorf("after the interrupts: %d, %v", n, err)
	}
}

// endsAfterCheck is a context whose Err is nil on the first call (the
// driver's check before it runs the statement) and that has ended by the
// time that call returns.
type endsAfterCheck struct {
	context.Context
	inner  context.Context
	cancel context.CancelFunc
	calls  int
}

func (c *endsAfterCheck) Done() <-chan struct{} { return c.inner.Done() }

func (c *endsAfterCheck) Err() error {
	c.calls++
	if c.calls == 1 {
		defer c.cancel()
		return nil
	}
	return c.inner.Err()
}

// _txlock=immediate begins read-write transactions with BEGIN IMMEDIATE:
// another connection cannot take the write lock before the first write.
func TestTxLock(t *testing.T) {
	path := dbPath(t)
	other := open(t, "sqlite", "file:"+path+"?"+pragmas+"&_pragma=busy_timeout(0)")
	exec(t, other, "CREATE TABLE t (v)")
	for _, lock := range []string{"immediate", "deferred"} {
		ours := open(t, sqlitedrv.DriverName, "file:"+path+"?"+strings.Replace(pragmas, "immediate", lock, 1))
		tx, err := ours.Begin()
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.Exec("INSERT INTO t VALUES (1)")
		if got := err != nil; got != (lock == "immediate") {
			t.Errorf("_txlock=%s: another connection's write during the transaction: %v", lock, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		// A read-only transaction never takes the write lock.
		tx, err = ours.BeginTx(t.Context(), &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Exec("INSERT INTO t VALUES (2)"); err != nil {
			t.Errorf("_txlock=%s: a write beside a read-only transaction: %v", lock, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// The DSN's pragmas run, after busy_timeout(5000); _time_format is
// refused.
func TestPragmas(t *testing.T) {
	path := dbPath(t)
	ours := open(t, sqlitedrv.DriverName, "file:"+path+"?"+pragmas+"&_pragma=wal_autocheckpoint(0)")
	for q, want := range map[string]string{
		"PRAGMA journal_mode": "wal", "PRAGMA foreign_keys": "1", "PRAGMA synchronous": "1",
		"PRAGMA wal_autocheckpoint": "0", "PRAGMA busy_timeout": "5000",
	} {
		var got string
		if err := ours.QueryRow(q).Scan(&got); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", q, got, err, want)
		}
	}
	bad := open(t, sqlitedrv.DriverName, "file:"+path+"?_time_format=sqlite")
	if err := bad.Ping(); err == nil {
		t.Error("_time_format was taken")
	}
}

// Errors carry SQLite's extended code and read as glebarez/go-sqlite's.
func TestErrors(t *testing.T) {
	ours, theirs := both(t, dbPath(t))
	exec(t, ours, "CREATE TABLE p (id TEXT PRIMARY KEY)")
	exec(t, ours, "CREATE TABLE c (id INTEGER PRIMARY KEY, p TEXT REFERENCES p(id), u TEXT UNIQUE)")
	exec(t, ours, "INSERT INTO p VALUES ('a')")
	exec(t, ours, "INSERT INTO c VALUES (1, 'a', 'x')")
	for q, code := range map[string]int{
		"INSERT INTO p VALUES ('a')":         lib.SQLITE_CONSTRAINT_PRIMARYKEY,
		"INSERT INTO c VALUES (2, 'a', 'x')": lib.SQLITE_CONSTRAINT_UNIQUE,
		"INSERT INTO c VALUES (3, 'b', 'y')": lib.SQLITE_CONSTRAINT_FOREIGNKEY,
		"SELECT nope FROM p":                 lib.SQLITE_ERROR,
	} {
		_, err := ours.Exec(q)
		var e *sqlitedrv.Error
		if !errors.As(err, &e) || e.Code() != code {
			t.Errorf("%s: %v, want code %d", q, err, code)
			continue
		}
		_, want := theirs.Exec(q)
		if want == nil || err.Error() != want.Error() {
			t.Errorf("%s: %q, glebarez says %q", q, err, want)
		}
	}
}
