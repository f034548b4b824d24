package sqlitedrv

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite" // "sqlite": a reader on SQLite's own VFS
)

// TestWALBuffer: a connection on WALBufferVFS writes each small commit's
// frames in one write, and a reader on SQLite's own VFS sees every commit
// as soon as it returns, through large commits (more than walBufferMax,
// with the page cache spilling frames before the commit), a rolled-back
// spilled transaction and checkpoints; the file is sound afterwards.
func TestWALBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	const pragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	w := openDB(t, DriverName, "file:"+path+"?"+pragmas+"&_pragma=cache_size(20)&_pragma=wal_autocheckpoint(0)&vfs="+WALBufferVFS)
	r := openDB(t, "sqlite", "file:"+path+"?"+pragmas)
	run := func(db *sql.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	run(w, "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v BLOB NOT NULL)")
	run(w, "CREATE INDEX t_k ON t (k, id)")
	rows, bytes := 0, 0
	see := func(when string) {
		t.Helper()
		var n, b int
		if err := r.QueryRow("SELECT count(*), coalesce(sum(length(v)), 0) FROM t").Scan(&n, &b); err != nil {
			t.Fatalf("%s: read: %v", when, err)
		}
		if n != rows || b != bytes {
			t.Fatalf("%s: the reader sees %d rows of %d bytes, want %d of %d", when, n, b, rows, bytes)
		}
	}
	insert := func(tx *sql.Tx, n, size int) {
		t.Helper()
		for range n {
			rows++
			if _, err := tx.Exec("INSERT INTO t (k, v) VALUES (?, ?)", fmt.Sprintf("c%03d", rows*37%100), strings.Repeat("x", size)); err != nil {
				t.Fatal(err)
			}
			bytes += size
		}
	}
	commit := func(n, size int) int64 {
		t.Helper()
		before := walVFS.writes.Load()
		tx, err := w.Begin()
		if err != nil {
			t.Fatal(err)
		}
		insert(tx, n, size)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return walVFS.writes.Load() - before
	}
	for i := range 50 { // the mix's commits: 8 small rows of 8 index pages
		if got := commit(8, 100); got != 1 && i > 0 {
			t.Errorf("commit %d: %d writes of the WAL, want 1", i, got)
		}
		see(fmt.Sprintf("commit %d", i))
	}
	if got := commit(600, 4000); got < 2 {
		t.Errorf("a commit of 2.4 MB: %d writes, want several (at most %d bytes each)", got, walWriteMax)
	}
	see("after a large commit")
	tx, err := w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	r0, b0 := rows, bytes
	insert(tx, 300, 4000) // spills frames into the WAL
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	rows, bytes = r0, b0
	see("after a rollback")
	commit(8, 100)
	see("after the rollback's next commit")
	run(r, "PRAGMA wal_checkpoint(PASSIVE)")
	commit(8, 100)
	see("after a checkpoint")
	run(w, "PRAGMA wal_checkpoint(TRUNCATE)")
	commit(8, 100)
	see("after the WAL started over")
	for _, db := range []*sql.DB{w, r} {
		var ok string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("integrity_check: %q, %v", ok, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	see("after the writer closed")
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
