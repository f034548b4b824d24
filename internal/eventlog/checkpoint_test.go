package eventlog

import (
	"database/sql"
	"path/filepath"
	"runtime"
	"testing"

	_ "github.com/glebarez/go-sqlite" // "sqlite": the writer's and the checkpointer's connections here
)

// While the writer's tail checkpoint is due, the checkpointer runs none of
// its own: the two would meet, and the tail fail as busy (one checkpoint at
// a time), so that under load the WAL never started over.
func TestNoCheckpointWhileTheTailIsDue(t *testing.T) {
	t.Parallel()
	dsn := "file:" + filepath.Join(t.TempDir(), "w.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		return db
	}
	w := open()
	defer w.Close()
	if _, err := w.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	c := NewCheckpointer(open(), w)
	defer c.Close()
	c.gap.Store(0)
	c.tailDue.Store(true)
	before := c.runs.Load()
	// Two kicks, each taken: the checkpointer has handled the first once
	// it takes the second.
	for range 2 {
		c.kick <- struct{}{}
		for len(c.kick) > 0 {
			runtime.Gosched()
		}
	}
	if n := c.runs.Load() - before; n != 0 {
		t.Fatalf("the checkpointer ran %d checkpoint(s) while the tail was due", n)
	}
	c.Committed() // the writer's tail, after its next commit
	if c.tailDue.Load() || c.tails.Load() != 1 {
		t.Fatalf("after the writer's turn: tail due %v, %d tails", c.tailDue.Load(), c.tails.Load())
	}
}
