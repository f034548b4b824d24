package eventlog

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// modeTable is the events table of the mode switch's and the redaction's
// tests: a schema of the test's own, no table of the store's.
var modeTable = Table{Name: "ev", Columns: [7]string{"seq", "id", "k", "created", "type", "payload", "owner"}, Meta: "meta", Pruned: "pruned"}

func newModeDB(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "m.db")), &gorm.Config{SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{
		"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
		"CREATE TABLE ev (seq INTEGER PRIMARY KEY, id TEXT, k TEXT, created DATETIME, type TEXT, payload TEXT, owner TEXT)",
	} {
		if err := db.Exec(ddl).Error; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if d, err := db.DB(); err == nil {
			_ = d.Close()
		}
	})
	return db
}

// TestPlainIndexOnItsOwnTables: MigratePlain makes the index and the run
// index's (empty) table, the index serves Seqs in pages, and DropPlain
// drops it and keeps the table.
func TestPlainIndexOnItsOwnTables(t *testing.T) {
	t.Parallel()
	db := newModeDB(t)
	ix := NewPlainIndex("ev_by_k", NewRuns(Runs{Table: "ev_k", Column: "k", Events: "ev", Indexed: "k IS NOT NULL", MarkKey: "k_mark"}))
	if err := MigratePlain(db, ix); err != nil {
		t.Fatal(err)
	}
	if err := MigratePlain(db, ix); err != nil { // again: nothing to do
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 7; seq++ {
		k := "a"
		if seq%2 == 0 {
			k = "b"
		}
		if err := db.Exec("INSERT INTO ev (seq, k, payload) VALUES (?, ?, '')", seq, k).Error; err != nil {
			t.Fatal(err)
		}
	}
	var plan []struct {
		ID, Parent, Notused int
		Detail              string
	}
	if err := db.Raw("EXPLAIN QUERY PLAN "+ix.SeqsSQL(), "a", 0).Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || !strings.Contains(plan[0].Detail, "INDEX ev_by_k (") {
		t.Errorf("plan of %s: %+v, want the index", ix.SeqsSQL(), plan)
	}
	for _, c := range []struct {
		after int64
		want  int
		seqs  []int64
		more  bool
	}{{0, 0, []int64{1, 3, 5, 7}, false}, {0, 2, []int64{1, 3}, true}, {3, 2, []int64{5, 7}, false}, {7, 0, nil, false}} {
		seqs, more, err := ix.Seqs(db, "a", c.after, c.want)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqs, c.seqs) || more != c.more {
			t.Errorf("Seqs(a, %d, %d) = %v, %v; want %v, %v", c.after, c.want, seqs, more, c.seqs, c.more)
		}
	}
	if err := DropPlain(db, ix); err != nil {
		t.Fatal(err)
	}
	if db.Migrator().HasIndex("ev", "ev_by_k") || !db.Migrator().HasTable("ev_k") {
		t.Error("DropPlain left the index or took the run index's table")
	}
}

// TestRedactOnItsOwnTables: Redact walks a key's seqs in batches, writes
// back each payload the rewrite changed (and only those), and returns the
// seqs the events table does not hold (the delta log's).
func TestRedactOnItsOwnTables(t *testing.T) {
	t.Parallel()
	db := newModeDB(t)
	var key []int64 // the key's seqs: those in ev, and every third one missing from it
	for seq := int64(1); seq <= 3*RedactBatch/2; seq++ {
		key = append(key, seq)
		if seq%3 == 0 {
			continue
		}
		payload := "secret"
		if seq%5 == 0 {
			payload = "gone" // redacted already
		}
		if err := db.Exec("INSERT INTO ev (seq, k, payload) VALUES (?, 'a', ?)", seq, payload).Error; err != nil {
			t.Fatal(err)
		}
	}
	var updates int
	side, err := Redact(Redaction{
		Table: &modeTable,
		What:  "key a",
		Seqs: func(after int64, want int) ([]int64, bool, error) {
			i, _ := slices.BinarySearch(key, after+1)
			rest := key[i:]
			if len(rest) > want {
				return rest[:want], true, nil
			}
			return rest, false, nil
		},
		Query: func(q string, args ...any) (*sql.Rows, error) { return db.Raw(q, args...).Rows() },
		Exec: func(q string, args ...any) error {
			updates++
			return db.Exec(q, args...).Error
		},
		Rewrite: func(string) (string, error) { return "gone", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var wantSide []int64
	wantUpdates := 0
	for _, seq := range key {
		switch {
		case seq%3 == 0:
			wantSide = append(wantSide, seq)
		case seq%5 != 0:
			wantUpdates++
		}
	}
	if !slices.Equal(side, wantSide) {
		t.Errorf("Redact returned %d seqs, want the %d the table lacks", len(side), len(wantSide))
	}
	if updates != wantUpdates {
		t.Errorf("Redact wrote %d payloads, want %d (the changed ones)", updates, wantUpdates)
	}
	var left int64
	if err := db.Raw("SELECT COUNT(*) FROM ev WHERE payload <> 'gone'").Scan(&left).Error; err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d payloads are still there", left)
	}
}
