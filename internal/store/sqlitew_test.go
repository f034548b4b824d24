package store

import (
	"path/filepath"
	"testing"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// writerConnStats are the statement counters of the SQLite writer's one
// connection; the test fails unless it is sqlitedrv's.
func writerConnStats(t *testing.T, s *Store) sqlitedrv.Stats {
	t.Helper()
	wDB, err := s.w.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := wDB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var st sqlitedrv.Stats
	if err := conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlitedrv.Conn)
		if !ok {
			t.Fatalf("the writer's connection is a %T, not sqlitedrv's", dc)
		}
		st = c.Stats()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// The writer compiles its statements once: once every kind of commit ran,
// further commits (BEGIN IMMEDIATE, the INSERT, COMMIT, gorm's statements)
// take them all from its connection's cache.
func TestWriterKeepsStatements(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "w.db"), Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "t"))
	for range 3 {
		mustAppend(t, s, textRec("c1", "x"), userRec("c1", "hi", ""))
	}
	before := writerConnStats(t, s)
	const appends = 20
	for range appends {
		mustAppend(t, s, textRec("c1", "x"), userRec("c1", "hi", ""))
	}
	after := writerConnStats(t, s)
	// At most one text is new: the PRAGMA of a checkpoint tail
	// (checkpoint.go), should one have fallen due.
	if c := after.Compiled - before.Compiled; c > 1 {
		t.Errorf("%d statements compiled for %d appends, want none", c, appends)
	}
	if r := after.Reused - before.Reused; r < 3*appends {
		t.Errorf("%d cached statements taken for %d appends, want at least %d", r, appends, 3*appends)
	}
	if got := len(allEvents(t, s)); got != 1+2*(3+appends) {
		t.Errorf("%d events stored, want %d", got, 1+2*(3+appends))
	}
}

// A replay compiles its statement once for every page size: the page's
// limit is bound, not written into the text (withLimit), so reads of
// pages of 30 different sizes take one cached statement.
func TestReplayKeepsStatements(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "r.db"), Options{Mode: ModeFast})
	if s.ev == nil {
		t.Fatal("fast mode has no replay pool")
	}
	mustAppend(t, s, createdRec("c1", "t"))
	for range 40 {
		mustAppend(t, s, userRec("c1", "hi", ""))
	}
	read := func(limit int) {
		t.Helper()
		evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{ConversationID: "c1", Limit: limit})
		if err != nil || len(evs) != limit {
			t.Fatalf("a page of %d: %d events, %v", limit, len(evs), err)
		}
	}
	read(1)
	read(2) // the text's second compile caches it
	before, err := s.ev.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for limit := 3; limit <= 32; limit++ {
		read(limit)
	}
	after, err := s.ev.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c := after.Compiled - before.Compiled; c > 0 {
		t.Errorf("%d statements compiled for pages of 30 sizes, want none", c)
	}
	if r := after.Reused - before.Reused; r < 30 {
		t.Errorf("%d cached statements taken for 30 pages, want at least 30", r)
	}
}

// Every SQLite connection bounds its page cache (sqliteCache): the writer
// and the readers alike; a DSN's own cache_size wins.
func TestPageCachesBounded(t *testing.T) {
	t.Parallel()
	cacheSize := func(t *testing.T, db *gorm.DB) int {
		t.Helper()
		var n int
		if err := db.Raw("PRAGMA cache_size").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"), Options{})
	if w, r := cacheSize(t, s.w), cacheSize(t, s.r); w != -256 || r != -256 {
		t.Errorf("cache_size: writer %d, reader %d; want -256 (256 KiB) each", w, r)
	}
	own := open(t, "sqlite:"+filepath.Join(t.TempDir(), "o.db")+"?_pragma=cache_size(-1000)", Options{})
	if w, r := cacheSize(t, own.w), cacheSize(t, own.r); w != -1000 || r != -1000 {
		t.Errorf("cache_size with the DSN's own: writer %d, reader %d; want -1000 each", w, r)
	}
}
