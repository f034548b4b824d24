package store

import (
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// A create that is refused (the id is another user's conversation) changes
// nothing: the writer keeps an owner only once its transaction committed,
// so the conversation's later events stay its owner's, published, stored
// and replayed (issue 46, item 1: the caller became their owner).
func TestRefusedCreateLeavesTheOwner(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		rec := &encodedRecorder{}
		s := open(t, dsn, Options{Publish: rec.publish})
		mustAppend(t, s, ownedRec("vic-1", "the victim's", "vic"))
		if err := s.Append(t.Context(), ownedRec("vic-1", "", "mal")); err == nil {
			t.Fatal("a second create of vic-1 was stored")
		}
		mustAppend(t, s, userRec("vic-1", "secret plans", ""))
		for range 3 {
			mustAppend(t, s, textRec("vic-1", "tok"))
		}
		mustAppend(t, s, assistantRec("vic-1", "more secret plans"))

		if got := rec.owners(); len(got["mal"]) != 0 || len(got["vic"]) != 6 {
			t.Errorf("published owners %v, want vic's 6 events and none of mal's", got)
		}
		for owner, want := range map[string]int{"vic": 6, "mal": 0} {
			evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{Owner: owner})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != want {
				t.Errorf("%s's replay holds %d events, want %d", owner, len(evs), want)
			}
		}
	})
}

// A database whose events were stored with a wrong owner (by the defect
// above) is repaired at open: rows, delta log records and the owner index
// take the owner of their conversation, once.
func TestOpenRepairsEventOwners(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{ModeFast, ModePlain} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			openRepaired(t, mode)
		})
	}
}

// openRepaired makes a database whose events a refused create gave a wrong
// owner (written in fast mode: rows and delta log records) and opens it in
// mode.
func openRepaired(t *testing.T, mode Mode) {
	dir := t.TempDir()
	dsn := "sqlite:" + dir + "/a.db"
	s := open(t, dsn, Options{Mode: ModeFast}) // a delta log to repair
	mustAppend(t, s, ownedRec("vic-1", "the victim's", "vic"), ownedRec("mal-1", "mallory's", "mal"))
	mustAppend(t, s, userRec("vic-1", "secret plans", ""))
	for range 4 {
		mustAppend(t, s, textRec("vic-1", "tok"))
	}
	mustAppend(t, s, assistantRec("vic-1", "more secret plans"), userRec("mal-1", "hello", ""))
	if s.side.Count() != 4 {
		t.Fatalf("the delta log holds %d records, want 4", s.side.Count())
	}
	// What the defect left: the victim's events after the refused create
	// owned by mal, in agent_event, in the delta log and in the index, on
	// a database that was never repaired.
	for _, q := range []string{
		"UPDATE agent_event SET owner = 'mal' WHERE conversation_id = 'vic-1' AND type <> 'agent'",
		"DELETE FROM event_owner",
		"INSERT INTO event_owner (owner, seq) SELECT owner, seq FROM agent_event",
		"DELETE FROM meta WHERE key = '" + metaOwnersRepaired + "'",
	} {
		if err := s.w.Exec(q).Error; err != nil {
			t.Fatal(q, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The delta log's records, written again as the defect wrote them.
	side, err := eventlog.OpenDeltaLog(dir+"/a.db", s.epoch, slog.New(slog.DiscardHandler), redactedPayload)
	if err != nil {
		t.Fatal(err)
	}
	var deltas []eventlog.Delta
	if err := side.Each(func(d eventlog.Delta) error { d.Owner = "mal"; deltas = append(deltas, d); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := side.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(side.Dir()); err != nil {
		t.Fatal(err)
	}
	if side, err = eventlog.OpenDeltaLog(dir+"/a.db", s.epoch, slog.New(slog.DiscardHandler), redactedPayload); err != nil {
		t.Fatal(err)
	}
	if err := side.Append(deltas); err != nil {
		t.Fatal(err)
	}
	if err := side.Close(); err != nil {
		t.Fatal(err)
	}
	// Seen by one who opens it without the repair: mal reads vic's events.
	replay := func(s *Store, owner string) []agent.Encoded {
		t.Helper()
		evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}

	s = open(t, dsn, Options{Mode: mode})
	for _, e := range replay(s, "mal") {
		if e.ConversationID != "mal-1" || e.Owner != "mal" {
			t.Errorf("after the repair mal's replay holds %s's event %d of %s", e.Owner, e.Seq, e.ConversationID)
		}
	}
	vic := replay(s, "vic")
	if len(vic) != 7 || !slices.IsSortedFunc(vic, func(a, b agent.Encoded) int { return int(a.Seq - b.Seq) }) {
		t.Errorf("vic's replay holds %d events, want 7", len(vic))
	}
	for _, e := range vic {
		if e.Owner != "vic" || e.ConversationID != "vic-1" {
			t.Errorf("vic's replay: event %d of %s owned by %q", e.Seq, e.ConversationID, e.Owner)
		}
	}
	all, err := s.EncodedEvents(t.Context(), agent.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.ConversationID == "vic-1" && e.Owner != "vic" {
			t.Errorf("the admin's replay: event %d of vic-1 owned by %q", e.Seq, e.Owner)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// And it stays repaired on the next open.
	s = open(t, dsn, Options{Mode: mode})
	if got := replay(s, "vic"); len(got) != 7 {
		t.Errorf("reopened: vic's replay holds %d events, want 7", len(got))
	}
	if got := replay(s, "mal"); len(got) != 2 {
		t.Errorf("reopened: mal's replay holds %d events, want mal-1's 2", len(got))
	}
}
