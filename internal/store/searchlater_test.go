package store

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// ftsCount is how many rows of the FTS5 table fts match word, read there
// and not through Search (which waits for the index).
func ftsCount(t *testing.T, s *Store, fts, word string) int64 {
	t.Helper()
	var n int64
	if err := s.r.Raw("SELECT count(*) FROM "+fts+" WHERE "+fts+" MATCH ?", word).Scan(&n).Error; err != nil {
		t.Fatalf("%s MATCH %s: %v", fts, word, err)
	}
	return n
}

// waitIndexed waits until the writer has indexed every committed row.
func waitIndexed(t *testing.T, s *Store) {
	t.Helper()
	testwait.For(t, "the writer to index every committed message", func() bool { return s.bodies.mark.Load() == s.bodies.last.Load() })
}

// ftsIntact runs FTS5's integrity check of both indexes against search_doc:
// an external-content delete of a row the index never held, or a row
// indexed twice, fails it.
func ftsIntact(t *testing.T, s *Store) {
	t.Helper()
	for _, fts := range []string{"search_title", "search_body"} {
		if err := s.w.Exec("INSERT INTO " + fts + "(" + fts + ", rank) VALUES ('integrity-check', 1)").Error; err != nil {
			t.Errorf("%s integrity-check: %v", fts, err)
		}
	}
}

// A message's text is indexed after its commit, not in it; a search
// waits for it, so it finds what was answered before it began.
func TestSearchBodiesAfterTheCommit(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "agentik.db"), Options{})
	s.bodies.hold.Store(true) // the writer indexes only for a search
	mustAppend(t, s, createdRec("c1", "alpha"), userRec("c1", "zebra crossing", ""))
	if n := ftsCount(t, s, "search_body", "zebra"); n != 0 {
		t.Fatalf("the message's text was indexed in its commit (%d match)", n)
	}
	if n := ftsCount(t, s, "search_title", "alpha"); n != 1 {
		t.Fatalf("the title was not indexed in its commit (%d match)", n)
	}
	found := make(chan []string, 1)
	go func() {
		q, err := agent.ParseSearch("zebra", 0)
		if err != nil {
			t.Error(err)
		}
		res, err := s.Search(t.Context(), q)
		if err != nil {
			t.Error(err)
		}
		found <- ids(res)
	}()
	// The search waits for the index, and the writer indexes for it after
	// its next commit; on a busy machine that can be the first append's
	// own, whose hook runs after its Append returned: then the search is
	// done before the wait is seen.
	var got []string
	done := false
	testwait.For(t, "the search to wait for the index (or to be answered)", func() bool {
		select {
		case got = <-found:
			done = true
			return true
		default:
			return s.bodies.wanted.Load()
		}
	})
	if !done {
		mustAppend(t, s, renamedRec("c1", "beta")) // the writer's next commit indexes for it
		got = <-found
	}
	if !slices.Equal(got, []string{"c1"}) {
		t.Errorf("search for a message committed before it = %v, want [c1]", got)
	}
	if n := ftsCount(t, s, "search_body", "zebra"); n != 1 {
		t.Errorf("after the search: %d match, want 1", n)
	}
	ftsIntact(t, s)
}

// Without a search, the writer indexes when nothing waits for it.
func TestSearchBodiesWhenIdle(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "agentik.db"), Options{})
	mustAppend(t, s, createdRec("c1", "alpha"), userRec("c1", "zebra crossing", ""))
	waitIndexed(t, s)
	if n := ftsCount(t, s, "search_body", "zebra"); n != 1 {
		t.Errorf("%d match, want 1", n)
	}
}

// Rows a crash left unindexed are indexed at the next Open; a row deleted
// before it was indexed is not deleted from the index (which never held
// it), and the index stays whole.
func TestSearchBodiesAfterACrash(t *testing.T) {
	t.Parallel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "agentik.db")
	s, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, createdRec("c0", "indexed"), userRec("c0", "okapi indexed before", ""))
	waitIndexed(t, s)
	s.bodies.hold.Store(true)
	mustAppend(t, s, createdRec("c1", "kept"), userRec("c1", "zebra crossing", ""))
	mustAppend(t, s, createdRec("c2", "gone"), userRec("c2", "zebra stripes", ""))
	mustAppend(t, s, deletedRec("c2"), deletedRec("c0"))
	if n := ftsCount(t, s, "search_body", "zebra"); n != 0 {
		t.Fatalf("held, yet %d indexed", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dsn, Options{})
	if got := ids(search(t, s, "zebra")); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("after reopening: %v, want [c1]", got)
	}
	if n := ftsCount(t, s, "search_body", "okapi"); n != 0 {
		t.Errorf("a deleted, indexed message still matches (%d)", n)
	}
	ftsIntact(t, s)
}

// A database whose rows were all indexed in their commits (made before
// the mark) gets its last row as the mark: nothing is indexed twice.
func TestSearchBodiesMarkOfAnOlderDatabase(t *testing.T) {
	t.Parallel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "agentik.db")
	s, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, createdRec("c1", "alpha"), userRec("c1", "zebra crossing", ""), userRec("c1", "zebra again", ""))
	if got := ids(search(t, s, "zebra")); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("search = %v", got)
	}
	if err := s.w.Where("key = ?", metaSearchBodyMark).Delete(&metaRow{}).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dsn, Options{})
	if n := ftsCount(t, s, "search_body", "zebra"); n != 2 {
		t.Errorf("%d rows match, want the 2 messages once each", n)
	}
	ftsIntact(t, s)
}
