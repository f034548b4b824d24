package eventlog

import (
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentik/agentik/internal/agent"
)

// testRec is a record of the writer's tests: an event id, the seq the
// writer gave it, and whether its rows are refused.
type testRec struct {
	id  string
	seq int64
	bad bool
	at  time.Time // its row's created
}

// testLog is a Writer of testRecs on a SQLite table ev, with what it
// published.
type testLog struct {
	w  *Writer[*testRec]
	db *gorm.DB

	mu        sync.Mutex
	published []int64 // the seqs handed to OnCommit, in order
	upTo      []int64
}

func newTestLog(t *testing.T) *testLog {
	t.Helper()
	db, err := gorm.Open(sqlite.Open("file:"+filepath.Join(t.TempDir(), "w.db")+"?_txlock=immediate"), &gorm.Config{SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = sqlDB.Close() })
	for _, ddl := range []string{
		"CREATE TABLE ev (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, k TEXT, created TEXT, type TEXT, payload TEXT, owner TEXT)",
		"CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT)",
	} {
		if err := db.Exec(ddl).Error; err != nil {
			t.Fatal(err)
		}
	}
	l := &testLog{db: db}
	l.w = NewWriter(Hooks[*testRec]{
		Light:  func([]*testRec) bool { return true },
		ID:     func(r *testRec) (string, bool) { return r.id, r.id != "" },
		Stored: func(r *testRec, seq int64) { r.seq = seq },
		Seq:    func(r *testRec) int64 { return r.seq },
		Unseq:  func(r *testRec) { r.seq = 0 },
		Begin:  func(*gorm.DB, []*Request[*testRec]) error { return nil },
		Apply: func(_ *gorm.DB, r *testRec, seq int64) (Row, agent.Encoded, bool, error) {
			if r.bad {
				return Row{}, agent.Encoded{}, false, agent.Errorf(agent.CodeBadRequest, "%s is bad", r.id)
			}
			r.seq = seq
			return Row{Seq: seq, ID: r.id, Created: r.at, Type: "t", Payload: "{}"}, agent.Encoded{Seq: seq, ID: r.id}, true, nil
		},
		Applied: func(*gorm.DB, []*testRec) error { return nil },
		Finish:  func(*gorm.DB, int64) error { return nil },
		End:     func(bool, int64) {},
		OnCommit: func(upTo int64, evs []agent.Encoded) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, ev := range evs {
				l.published = append(l.published, ev.Seq)
			}
			l.upTo = append(l.upTo, upTo)
			return nil
		},
	})
	l.w.Configure(Config{
		DB: db, Ctx: t.Context(),
		Table: Table{Name: "ev", Columns: [7]string{"seq", "id", "k", "created", "type", "payload", "owner"}, Meta: "kv", Pruned: "pruned"},
	})
	return l
}

// stored is the seqs of ev, in order.
func (l *testLog) stored(t *testing.T) []int64 {
	t.Helper()
	var seqs []int64
	if err := l.db.Raw("SELECT seq FROM ev ORDER BY seq").Scan(&seqs).Error; err != nil {
		t.Fatal(err)
	}
	return seqs
}

// TestWriterAppends: Append commits a request's records in order with the
// next seqs, stores their rows and publishes them; Close lets the queue
// drain and refuses the next Append.
func TestWriterAppends(t *testing.T) {
	l := newTestLog(t)
	l.w.Start()
	a, b := &testRec{id: "a"}, &testRec{id: "b"}
	if err := l.w.Append(t.Context(), []*testRec{a, b}); err != nil {
		t.Fatal(err)
	}
	if a.seq != 1 || b.seq != 2 {
		t.Errorf("seqs %d, %d; want 1, 2", a.seq, b.seq)
	}
	if got := l.stored(t); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("stored %v, want [1 2]", got)
	}
	if !slices.Equal(l.published, []int64{1, 2}) || !slices.Equal(l.upTo, []int64{2}) {
		t.Errorf("published %v through %v; want [1 2] through [2]", l.published, l.upTo)
	}
	if pruned, head, err := l.w.cfg.Table.Bounds(l.db); err != nil || pruned != 0 || head != 2 {
		t.Errorf("Bounds = %d, %d, %v; want 0, 2", pruned, head, err)
	}
	if !l.w.Close() || l.w.Close() {
		t.Error("Close: want true, then false")
	}
	if err := l.w.Append(t.Context(), []*testRec{{id: "c"}}); err != ErrClosed {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
}

// TestWriterSplitsAFailedBatch: a batch whose transaction fails is
// committed request by request, each looking its ids up: the bad request
// fails alone with its seqs cleared, a replayed event is skipped with its
// stored seq, and the seqs leave no gap.
func TestWriterSplitsAFailedBatch(t *testing.T) {
	l := newTestLog(t)
	first := NewRequest([]*testRec{{id: "a"}})
	l.w.Commit([]*Request[*testRec]{first})
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	good := NewRequest([]*testRec{{id: "b"}})
	bad := NewRequest([]*testRec{{id: "c"}, {id: "d", bad: true}})
	replay := NewRequest([]*testRec{{id: "a"}, {id: "e"}})
	l.w.Commit([]*Request[*testRec]{good, bad, replay})
	if err := good.Wait(); err != nil {
		t.Errorf("good: %v", err)
	}
	if err := bad.Wait(); agent.ErrorCode(err) != agent.CodeBadRequest {
		t.Errorf("bad: %v, want bad_request", err)
	}
	if err := replay.Wait(); err != nil {
		t.Errorf("replay: %v", err)
	}
	if s := bad.Recs[0].seq; s != 0 {
		t.Errorf("the bad request's first record keeps seq %d, want 0", s)
	}
	if a, e := replay.Recs[0].seq, replay.Recs[1].seq; a != 1 || e != 3 {
		t.Errorf("replayed a, new e: seqs %d, %d; want 1 (stored), 3", a, e)
	}
	if got := l.stored(t); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("stored %v, want [1 2 3]", got)
	}
	if l.w.Stats.Split != 1 {
		t.Errorf("%d split batches, want 1", l.w.Stats.Split)
	}
	if !slices.Equal(l.published, []int64{1, 2, 3}) {
		t.Errorf("published %v, want [1 2 3]", l.published)
	}
}

// TestWriterCommitsDeltas: CommitDeltas gives a batch's records the seqs
// after the writer's last (a repeated id its first's), appends them to
// the delta log in one commit and defers their index entries; a record
// refused clears every seq of the batch and commits nothing.
func TestWriterCommitsDeltas(t *testing.T) {
	l := newTestLog(t)
	log, err := OpenDeltaLog(filepath.Join(t.TempDir(), "d.db"), "e", slog.New(slog.DiscardHandler), func(p string) (string, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	conv, owner := NewRunIndex(nil, 0), NewRunIndex(nil, 0)
	l.w.SetLast(4)
	delta := func(r *testRec, seq int64) (Delta, agent.Encoded, error) {
		if r.bad {
			return Delta{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "%s is bad", r.id)
		}
		r.seq = seq
		return Delta{Seq: seq, Conv: "c", Owner: "ann", ID: r.id, JSON: []byte(`{}`)}, agent.Encoded{Seq: seq, ID: r.id}, nil
	}
	a, b, again := &testRec{id: "a"}, &testRec{id: "b"}, &testRec{id: "a"}
	evs, err := l.w.CommitDeltas(log, []*Request[*testRec]{NewRequest([]*testRec{a, b}), NewRequest([]*testRec{again})}, conv, owner, delta)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || a.seq != 5 || b.seq != 6 || again.seq != 5 || l.w.Last() != 6 {
		t.Errorf("%d events, seqs a %d b %d a again %d, last %d; want 2, 5 6 5, 6", len(evs), a.seq, b.seq, again.seq, l.w.Last())
	}
	if n, h := log.Count(), log.Head(); n != 2 || h != 6 {
		t.Errorf("delta log: %d records through %d, want 2 through 6", n, h)
	}
	if got := conv.PendingAfter("c", 0); !slices.Equal(got, []int64{5, 6}) {
		t.Errorf("conversation entries waiting: %v, want [5 6]", got)
	}
	if got := owner.PendingAfter("ann", 0); !slices.Equal(got, []int64{5, 6}) {
		t.Errorf("owner entries waiting: %v, want [5 6]", got)
	}
	c, bad := &testRec{id: "c"}, &testRec{id: "d", bad: true}
	if _, err := l.w.CommitDeltas(log, []*Request[*testRec]{NewRequest([]*testRec{c, bad})}, conv, owner, delta); agent.ErrorCode(err) != agent.CodeBadRequest {
		t.Fatalf("a bad record: %v, want bad_request", err)
	}
	if c.seq != 0 || l.w.Last() != 6 || log.Count() != 2 {
		t.Errorf("after a refused commit: c's seq %d, last %d, %d records; want 0, 6, 2", c.seq, l.w.Last(), log.Count())
	}
}

// TestWriterPrunes: Prune deletes the prefix of events created before a
// time, never a hole (an older event after a newer one waits for it), and
// records the pruned-through seq.
func TestWriterPrunes(t *testing.T) {
	l := newTestLog(t)
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d int) time.Time { return day.AddDate(0, 0, d) }
	r := NewRequest([]*testRec{{id: "a", at: at(1)}, {id: "b", at: at(3)}, {id: "c", at: at(2)}, {id: "d", at: at(4)}})
	l.w.Commit([]*Request[*testRec]{r})
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	n, err := l.w.Prune(t.Context(), at(3), Pruned{})
	if err != nil || n != 1 {
		t.Fatalf("Prune before day 3: %d, %v; want 1 (a; c waits for b)", n, err)
	}
	if got := l.stored(t); !slices.Equal(got, []int64{2, 3, 4}) {
		t.Errorf("stored %v, want [2 3 4]", got)
	}
	if pruned, head, err := l.w.cfg.Table.Bounds(l.db); err != nil || pruned != 1 || head != 4 {
		t.Errorf("Bounds = %d, %d, %v; want 1, 4", pruned, head, err)
	}
	if n, err := l.w.Prune(t.Context(), at(5), Pruned{}); err != nil || n != 3 {
		t.Fatalf("Prune before day 5: %d, %v; want 3", n, err)
	}
	if pruned, head, err := l.w.cfg.Table.Bounds(l.db); err != nil || pruned != 4 || head != 0 {
		t.Errorf("Bounds = %d, %d, %v; want 4, 0", pruned, head, err)
	}
}
