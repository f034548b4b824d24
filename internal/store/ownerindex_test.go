package store

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// readOwner returns the seqs of owner's events (agent events only with
// agentOnly), read as a member's replay of the whole log reads them, in
// pages of limit (0: one read).
func readOwner(t *testing.T, s *Store, owner string, agentOnly bool, limit int) []int64 {
	t.Helper()
	var out []int64
	after := int64(0)
	for {
		evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{Owner: owner, AgentOnly: agentOnly, After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Owner != owner || (agentOnly && e.Kind != agent.KindAgent) {
				t.Fatalf("seq %d (%s, %s's) read as %s's", e.Seq, e.Kind, e.Owner, owner)
			}
			out = append(out, e.Seq)
		}
		if limit == 0 || len(evs) == 0 {
			return out
		}
		after = evs[len(evs)-1].Seq
	}
}

// wantOwnerSeqs is the seqs of owner's events in the whole log.
func wantOwnerSeqs(t *testing.T, s *Store, owner string, agentOnly bool) []int64 {
	t.Helper()
	all, err := s.EncodedEvents(t.Context(), agent.EventQuery{}) // an admin's: every event, with its owner
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, ev := range all {
		if ev.Owner == owner && (!agentOnly || ev.Kind == agent.KindAgent) {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// ownerEntries returns the seqs event_owner holds for owner.
func ownerEntries(t *testing.T, s *Store, owner string) []int64 {
	t.Helper()
	out, _, err := runSeqs(s.r, ownerRuns, owner, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOwnerIndexDefersDeltas: on SQLite a member's replay of the whole log
// reads event_owner, whose text deltas' entries wait in memory as a
// conversation's do, and still gets every one of their events, in order,
// in one read or in pages across the pending ones; after a restart (the
// pending entries lost, as a kill loses them) the entries are written at
// open; after a prune, the pruned ones are gone from the table and memory.
func TestOwnerIndexDefersDeltas(t *testing.T) {
	t.Parallel()
	dsn := "sqlite:" + t.TempDir() + "/a.db"
	s, err := Open(t.Context(), dsn, Options{Mode: ModeFast})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, ownedRec("a1", "ann's", "ann"), ownedRec("b1", "bob's", "bob"), ownedRec("a2", "ann's too", "ann"))
	mustAppend(t, s, userRec("a1", "hi", ""), userRec("b1", "hi", ""), userRec("a2", "hi", ""))
	for i := range 30 {
		mustAppend(t, s, textRec("a1", "a"+strconv.Itoa(i)), textRec("b1", "b"+strconv.Itoa(i)))
		mustAppend(t, s, textRec("a2", "c"+strconv.Itoa(i)))
	}
	check := func(when string) {
		t.Helper()
		for _, owner := range []string{"ann", "bob"} {
			for _, agentOnly := range []bool{false, true} {
				want := wantOwnerSeqs(t, s, owner, agentOnly)
				for _, limit := range []int{0, 1, 7, 50, 100} {
					if got := readOwner(t, s, owner, agentOnly, limit); !slices.Equal(got, want) {
						t.Errorf("%s: %s's events (agent only %v) in pages of %d: %v, want %v", when, owner, agentOnly, limit, got, want)
					}
				}
			}
		}
	}
	if n := len(wantOwnerSeqs(t, s, "ann", false)); n != 64 {
		t.Fatalf("ann has %d events, want 64", n)
	}
	if got := ownerEntries(t, s, "ann"); len(got) != 4 || len(s.ownerIx.PendingAfter("ann", 0)) != 60 {
		t.Errorf("while the deltas wait: ann's index holds %v and %d wait, want 4 (created and user events) and 60", got, len(s.ownerIx.PendingAfter("ann", 0)))
	}
	check("deltas pending")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dsn, Options{Mode: ModeFast})
	if got := ownerEntries(t, s, "ann"); len(got) != 64 {
		t.Errorf("after reopening, ann's index holds %d entries, want all 64", len(got))
	}
	check("reopened")
	// Ann's next other event writes her pending entries again.
	for range 5 {
		mustAppend(t, s, textRec("a1", "more"))
	}
	mustAppend(t, s, convRec("a1", &agent.Event{Type: agent.EventEnd}))
	if got := ownerEntries(t, s, "ann"); len(got) != 70 || len(s.ownerIx.PendingAfter("ann", 0)) != 0 {
		t.Errorf("after a1's end: ann's index holds %d and %d wait, want 70 and none", len(got), len(s.ownerIx.PendingAfter("ann", 0)))
	}
	check("after the end")
}

// TestOwnerIndexMigrates: a database from before event_owner (its owner
// index an index of agent_event) opens with the table filled from the
// log, that index dropped, and every member's replay whole.
func TestOwnerIndexMigrates(t *testing.T) {
	t.Parallel()
	dsn := "sqlite:" + t.TempDir() + "/a.db"
	s, err := Open(t.Context(), dsn, Options{Mode: ModeFast})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, ownedRec("a1", "ann's", "ann"), ownedRec("b1", "bob's", "bob"))
	for range 10 {
		mustAppend(t, s, textRec("a1", "x"), textRec("b1", "y"))
	}
	for _, q := range []string{
		"DROP TABLE event_owner", forgetSchemaPrint,
		"DELETE FROM meta WHERE key = '" + metaOwnerIndexedThrough + "'",
		"CREATE INDEX " + droppedOwnerIndex + " ON agent_event (owner, seq)",
	} {
		if err := s.w.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dsn, Options{Mode: ModeFast})
	if s.w.Migrator().HasIndex(&eventRow{}, droppedOwnerIndex) {
		t.Errorf("%s is still there", droppedOwnerIndex)
	}
	for _, owner := range []string{"ann", "bob"} {
		want := wantOwnerSeqs(t, s, owner, false)
		if got := ownerEntries(t, s, owner); !slices.Equal(got, want) || len(want) != 11 {
			t.Errorf("%s's index holds %v, want %v (11)", owner, got, want)
		}
		if got := readOwner(t, s, owner, false, 4); !slices.Equal(got, want) {
			t.Errorf("%s's events %v, want %v", owner, got, want)
		}
	}
}

// TestOwnerIndexPrune: Prune deletes the pruned events' rows of event_owner
// and their pending entries.
func TestOwnerIndexPrune(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast, Now: clk.now})
	mustAppend(t, s, ownedRec("a1", "ann's", "ann"), userRec("a1", "old", ""))
	for range 5 {
		mustAppend(t, s, textRec("a1", "old"))
	}
	clk.advance(48 * time.Hour)
	mustAppend(t, s, textRec("a1", "new"))
	n, err := s.Prune(t.Context(), clk.now().Add(-24*time.Hour))
	if err != nil || n != 7 {
		t.Fatalf("Prune = %d, %v; want the 7 old events", n, err)
	}
	want := wantOwnerSeqs(t, s, "ann", false)
	if len(want) != 1 {
		t.Fatalf("ann keeps %v, want the one new delta", want)
	}
	if got := ownerEntries(t, s, "ann"); len(got) != 0 {
		t.Errorf("event_owner keeps %v of pruned events", got)
	}
	if got := s.ownerIx.PendingAfter("ann", 0); !slices.Equal(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
	if got := readOwner(t, s, "ann", false, 0); !slices.Equal(got, want) {
		t.Errorf("ann's events %v, want %v", got, want)
	}
}
