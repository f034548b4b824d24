package eventlog

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestRunRoundTrip: a row's seqs read back as written, above any cursor,
// and a damaged column is an error, not wrong seqs.
func TestRunRoundTrip(t *testing.T) {
	t.Parallel()
	for _, seqs := range [][]int64{{7}, {3, 7}, {1, 2, 3, 4}, {5, 300, 70000, 70001, 1 << 40}} {
		b := EncodeRun(seqs)
		key := seqs[len(seqs)-1]
		for _, after := range []int64{0, seqs[0], key - 1, key} {
			got, err := AppendRun(nil, key, b, after)
			if err != nil {
				t.Fatalf("%v after %d: %v", seqs, after, err)
			}
			var want []int64
			for _, s := range seqs {
				if s > after {
					want = append(want, s)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%v after %d: read %v, want %v", seqs, after, got, want)
			}
		}
	}
	for _, bad := range [][]byte{{0x80}, {10}, {1, 9}} { // a cut varint; a seq at or below 0; one past the key
		if got, err := AppendRun(nil, 10, bad, 0); err == nil {
			t.Errorf("seqs %x of key 10 read as %v, want an error", bad, got)
		}
	}
}

// TestRunIndexOnItsOwnTables: the run index is the engine's alone: on a
// schema of the test's own (no table of the store's but meta), deferred
// entries wait in memory and are read with the written ones, the key's
// next other entry writes them in one row, and a restart that lost the
// waiting ones (a crash) writes them from the events after the watermark.
func TestRunIndexOnItsOwnTables(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, ddl := range []string{
		"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
		"CREATE TABLE ev (seq INTEGER PRIMARY KEY, k TEXT)",
		"CREATE TABLE ev_k (k TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (k, seq)) WITHOUT ROWID",
	} {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	k := NewRuns(Runs{Table: "ev_k", Column: "k", Events: "ev", Indexed: "k <> ''", MarkKey: "ev_k_through",
		Key: func(e *agent.Encoded) string { return e.ConversationID }})
	ctx := t.Context()
	query := func(q string, args ...any) (*sql.Rows, error) { return db.QueryContext(ctx, q, args...) }
	seq := int64(0)
	// commit appends one event per key of keys in one transaction; the
	// deferrable ones may wait.
	commit := func(ix *RunIndex, deferrable bool, keys ...string) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rt := ix.Begin()
		for _, key := range keys {
			seq++
			if _, err := tx.ExecContext(ctx, "INSERT INTO ev (seq, k) VALUES (?, ?)", seq, key); err != nil {
				t.Fatal(err)
			}
			if err := rt.Add(ctx, tx, key, seq, deferrable); err != nil {
				t.Fatal(err)
			}
		}
		if err := rt.Finish(ctx, tx, seq); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		rt.Done()
	}
	written := func(key string) []int64 {
		t.Helper()
		seqs, _, err := k.Seqs(query, key, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	ix := NewRunIndex(k, 0)
	commit(ix, false, "a", "b")     // 1, 2
	commit(ix, true, "a", "b", "a") // 3, 4, 5: wait
	commit(ix, true, "a")           // 6
	if got := written("a"); !slices.Equal(got, []int64{1}) {
		t.Errorf("a's rows hold %v while its deltas wait, want [1]", got)
	}
	if got := ix.PendingAfter("a", 3); !slices.Equal(got, []int64{5, 6}) || ix.Waiting("a") != 3 {
		t.Errorf("a waits %v above 3 (%d in all), want [5 6] (3)", got, ix.Waiting("a"))
	}
	commit(ix, false, "a") // 7: takes 3, 5, 6 with it, in one row
	if got := written("a"); !slices.Equal(got, []int64{1, 3, 5, 6, 7}) || ix.Waiting("a") != 0 {
		t.Errorf("a's rows hold %v, %d wait; want [1 3 5 6 7], none", got, ix.Waiting("a"))
	}
	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM ev_k WHERE k = 'a'").Scan(&rows); err != nil || rows != 2 {
		t.Errorf("a has %d rows (%v), want 2: [1] and [3 5 6 7]", rows, err)
	}
	// b's delta (4) is lost with the memory; a restart's Recover writes it.
	mark, err := Recover(ctx, db, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := written("b"); !slices.Equal(got, []int64{2, 4}) || mark != seq {
		t.Errorf("after Recover b's rows hold %v and the watermark is %d; want [2 4] and %d", got, mark, seq)
	}
	if got, err := ReadMark(ctx, db, k); err != nil || got != seq {
		t.Errorf("stored watermark %d (%v), want %d", got, err, seq)
	}
	// A prune's Forget drops what it deleted; a nil index (PostgreSQL's)
	// has nothing pending and writes nothing.
	ix = NewRunIndex(k, mark)
	commit(ix, true, "c", "c")
	ix.Forget(seq - 1)
	if got := ix.PendingAfter("c", 0); !slices.Equal(got, []int64{seq}) {
		t.Errorf("after Forget(%d) c waits %v, want [%d]", seq-1, got, seq)
	}
	var none *RunIndex
	commit(none, false, "d")
	if got := written("d"); len(got) != 0 || none.PendingAfter("d", 0) != nil {
		t.Errorf("a nil index wrote %v", got)
	}
}
