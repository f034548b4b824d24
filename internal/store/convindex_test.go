package store

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// entries returns the seqs event_conversation holds for cid.
func entries(t *testing.T, s *Store, cid string) []int64 {
	t.Helper()
	out, _, err := convSeqs(s.r, cid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readConv returns the seqs of cid's conversation events, read as a
// subscriber's replay reads them, in pages of limit (0: one read).
func readConv(t *testing.T, s *Store, cid string, limit int) []int64 {
	t.Helper()
	var out []int64
	after := int64(0)
	for {
		evs, err := s.EncodedEvents(t.Context(), agent.EventQuery{ConversationID: cid, After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.ConversationID != cid {
				t.Fatalf("seq %d is %s's, read as %s's", e.Seq, e.ConversationID, cid)
			}
			out = append(out, e.Seq)
		}
		if limit == 0 || len(evs) == 0 {
			return out
		}
		after = evs[len(evs)-1].Seq
	}
}

// wantConvSeqs is the seqs of cid's conversation events in the whole log.
func wantConvSeqs(t *testing.T, s *Store, cid string) []int64 {
	t.Helper()
	var out []int64
	for _, ev := range allEvents(t, s) {
		if ev.Kind == agent.KindConversation && ev.ConversationID == cid {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// TestConvIndexDefersDeltas: on SQLite a text delta's index entry waits
// in memory until its conversation's next other event, and a read of the
// conversation meanwhile still gets every one of its events, in order, in
// one read or in pages that cut across the pending ones.
func TestConvIndexDefersDeltas(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "one"), createdRec("c2", "two"))
	mustAppend(t, s, userRec("c1", "hi", ""), userRec("c2", "hi", ""))
	for i := range 20 {
		mustAppend(t, s, textRec("c1", "a"+strconv.Itoa(i)))
		mustAppend(t, s, textRec("c2", "b"+strconv.Itoa(i)), textRec("c1", "c"+strconv.Itoa(i)))
	}
	want := wantConvSeqs(t, s, "c1")
	if len(want) != 41 {
		t.Fatalf("c1 has %d conversation events, want 41", len(want))
	}
	if got := entries(t, s, "c1"); len(got) != 2 {
		t.Errorf("c1's index holds %v while its deltas wait, want only its created and user events", got)
	}
	for _, limit := range []int{0, 1, 7, 40, 41, 100} {
		if got := readConv(t, s, "c1", limit); !slices.Equal(got, want) {
			t.Errorf("pages of %d: c1's events %v, want %v", limit, got, want)
		}
	}
	// The turn's end (another event of c1) writes them.
	mustAppend(t, s, convRec("c1", &agent.Event{Type: agent.EventEnd}))
	want = wantConvSeqs(t, s, "c1")
	got := entries(t, s, "c1")
	if len(got) != 43 || len(s.convIx.PendingAfter("c1", 0)) != 0 {
		t.Errorf("after c1's end its index holds %d entries and %d wait, want 43 and none", len(got), len(s.convIx.PendingAfter("c1", 0)))
	}
	if got := readConv(t, s, "c1", 5); !slices.Equal(got, want) {
		t.Errorf("after the end: c1's events %v, want %v", got, want)
	}
	// c2's deltas still wait, and read whole.
	if got, want := readConv(t, s, "c2", 3), wantConvSeqs(t, s, "c2"); !slices.Equal(got, want) {
		t.Errorf("c2's events %v, want %v", got, want)
	}
}

// TestConvIndexCapsPending: at most eventlog.PendingMax entries of a
// conversation wait; the next delta writes them all.
func TestConvIndexCapsPending(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "one"))
	recs := make([]*agent.Record, eventlog.PendingMax+10)
	for i := range recs {
		recs[i] = textRec("c1", "x")
	}
	mustAppend(t, s, recs[:100]...)
	mustAppend(t, s, recs[100:]...)
	if n := len(s.convIx.PendingAfter("c1", 0)); n >= eventlog.PendingMax {
		t.Errorf("%d entries of c1 wait, want fewer than %d", n, eventlog.PendingMax)
	}
	if got, want := readConv(t, s, "c1", 0), wantConvSeqs(t, s, "c1"); !slices.Equal(got, want) {
		t.Errorf("c1's events %v, want %v", got, want)
	}
}

// TestConvIndexRecoversPending: pending entries live in memory only; a
// store that stopped with some waiting (Close does not write them, as a
// kill does not) writes them when it opens the database again.
func TestConvIndexRecoversPending(t *testing.T) {
	t.Parallel()
	dsn := "sqlite:" + t.TempDir() + "/a.db"
	s, err := Open(t.Context(), dsn, Options{Mode: ModeFast})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, createdRec("c1", "one"), userRec("c1", "hi", ""))
	for range 5 {
		mustAppend(t, s, textRec("c1", "tok"))
	}
	if n := len(s.convIx.PendingAfter("c1", 0)); n != 5 {
		t.Fatalf("%d entries wait, want the 5 deltas'", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dsn, Options{Mode: ModeFast})
	want := wantConvSeqs(t, s, "c1")
	if got := entries(t, s, "c1"); len(got) != 7 {
		t.Errorf("after reopening, c1's index holds %v, want all 7 events", got)
	}
	if got := readConv(t, s, "c1", 0); !slices.Equal(got, want) || len(want) != 6 {
		t.Errorf("after reopening, c1's events %v, want %v (6)", got, want)
	}
}

// TestConvIndexWatermark: the stored watermark follows the oldest pending
// entry, and a stream that stalls with entries pending has them written
// once they fall the stale span behind the head, so the scan at open stays
// short.
func TestConvIndexWatermark(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	s.convIx.SetSpans(200, 40)
	mustAppend(t, s, createdRec("stalled", "s"), createdRec("busy", "b"))
	mustAppend(t, s, textRec("stalled", "waits"))
	stalled := s.convIx.PendingAfter("stalled", 0)
	if len(stalled) != 1 {
		t.Fatalf("stalled has %v pending, want its delta", stalled)
	}
	mark := func() int64 {
		n, err := eventlog.ReadMark(t.Context(), engineDB(s.r), convRuns.Runs)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 3 {
		recs := make([]*agent.Record, 50)
		for i := range recs {
			recs[i] = textRec("busy", "t")
			if i == 49 {
				recs[i] = convRec("busy", &agent.Event{Type: agent.EventEnd})
			}
		}
		mustAppend(t, s, recs...)
	}
	if m := mark(); m >= stalled[0] {
		t.Errorf("watermark %d passed stalled's pending seq %d", m, stalled[0])
	}
	for range 3 {
		recs := make([]*agent.Record, 50)
		for i := range recs {
			recs[i] = convRec("busy", &agent.Event{Type: agent.EventEnd})
		}
		mustAppend(t, s, recs...)
	}
	_, head, err := s.Bounds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(t, s, "stalled"); !slices.Contains(got, stalled[0]) {
		t.Errorf("stalled's delta %d is still not written %d seqs later (index: %v)", stalled[0], head-stalled[0], got)
	}
	if m := mark(); m < stalled[0] || head-m > 200 {
		t.Errorf("watermark %d with the head at %d: want it past %d and within 200 of the head", m, head, stalled[0])
	}
}

// TestConvIndexDeleteRedactsPending: a conversation deleted while its
// deltas wait has them redacted too.
func TestConvIndexDeleteRedactsPending(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "one"), userRec("c1", "hi", ""))
	mustAppend(t, s, textRec("c1", "secret-token"))
	mustAppend(t, s, textRec("c1", "secret-token"))
	mustAppend(t, s, deletedRec("c1"))
	for _, ev := range allEvents(t, s) {
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "secret") {
			t.Errorf("seq %d still says %s", ev.Seq, b)
		}
	}
}

// TestConvIndexDeleteRedactsEveryBatch: a delete redacts a conversation
// whose index holds more seqs than one redaction batch, in many rows and
// pending, every one of them.
func TestConvIndexDeleteRedactsEveryBatch(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "one"), userRec("c1", "hi", ""))
	recs := make([]*agent.Record, 3*redactBatch)
	for i := range recs {
		recs[i] = textRec("c1", "secret-token")
	}
	mustAppend(t, s, recs...)
	mustAppend(t, s, userRec("c1", "again", ""), textRec("c1", "secret-token"), textRec("c1", "secret-token"))
	mustAppend(t, s, deletedRec("c1"))
	n := 0
	for _, ev := range allEvents(t, s) {
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "secret") {
			n++
		}
	}
	if n > 0 {
		t.Errorf("%d events still say secret after the delete", n)
	}
}

// TestConvIndexPrune: Prune deletes the entries of the events it deletes,
// pending ones included.
func TestConvIndexPrune(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Mode: ModeFast, Now: clk.now})
		mustAppend(t, s, createdRec("c1", "one"), userRec("c1", "old", ""), textRec("c1", "old"))
		clk.advance(48 * 3600e9)
		mustAppend(t, s, createdRec("c2", "two"), userRec("c2", "new", ""))
		if _, err := s.Prune(t.Context(), clk.now().Add(-3600e9)); err != nil {
			t.Fatal(err)
		}
		if got := entries(t, s, "c1"); len(got) != 0 {
			t.Errorf("c1's index holds %v after its events were pruned", got)
		}
		if p := s.convIx.PendingAfter("c1", 0); len(p) != 0 {
			t.Errorf("c1 still has %v pending after its events were pruned", p)
		}
		if got := readConv(t, s, "c1", 0); len(got) != 0 {
			t.Errorf("c1 reads %v after its events were pruned", got)
		}
		if got := entries(t, s, "c2"); len(got) != 2 {
			t.Errorf("c2's index holds %v, want its 2 kept events", got)
		}
	})
}

// TestConvIndexMigrates: a database from before event_conversation (its
// conversations found by agent_event's own index) gets the table filled
// and the index dropped when it is opened.
func TestConvIndexMigrates(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s, err := Open(t.Context(), dsn, Options{Mode: ModeFast})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, createdRec("c1", "one"), userRec("c1", "hi", ""), textRec("c1", "a"), textRec("c1", "b"), createdRec("c2", "two"))
		for _, q := range []string{
			"DROP TABLE event_conversation", forgetSchemaPrint,
			"DELETE FROM meta WHERE key = '" + metaIndexedThrough + "'",
			"CREATE INDEX " + droppedConvIndex + " ON agent_event (conversation_id, seq)",
		} {
			if err := s.w.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, dsn, Options{Mode: ModeFast})
		if s.w.Migrator().HasIndex(&eventRow{}, droppedConvIndex) {
			t.Errorf("%s is still there", droppedConvIndex)
		}
		if got := entries(t, s, "c1"); len(got) != 4 {
			t.Errorf("c1's index holds %v, want its 4 events", got)
		}
		if got, want := readConv(t, s, "c1", 0), wantConvSeqs(t, s, "c1"); !slices.Equal(got, want) || len(want) != 3 {
			t.Errorf("c1's events %v, want %v (3)", got, want)
		}
	})
}

// TestConvIndexPruneWhileStreaming: Prune drops pruned pending entries
// while the writer defers others (run with -race), and the stream it did
// not prune reads whole.
func TestConvIndexPruneWhileStreaming(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast, Now: clk.now})
	mustAppend(t, s, createdRec("old", "o"), textRec("old", "x"), textRec("old", "y"))
	clk.advance(48 * 3600e9)
	mustAppend(t, s, createdRec("live", "l"))
	done := make(chan error, 1)
	go func() {
		for range 200 {
			if err := s.Append(t.Context(), textRec("live", "t")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if n, err := s.Prune(t.Context(), clk.now().Add(-3600e9)); err != nil || n != 3 {
		t.Errorf("Prune: %d, %v; want the 3 old events", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := s.convIx.PendingAfter("old", 0); len(p) != 0 {
		t.Errorf("old still has %v pending", p)
	}
	if got, want := readConv(t, s, "live", 50), wantConvSeqs(t, s, "live"); !slices.Equal(got, want) || len(want) != 200 {
		t.Errorf("live reads %d events, want %d (200)", len(got), len(want))
	}
}

// TestConvIndexSparseAndDense: a conversation that streamed alone is read
// as a range of the log, one among several by its seqs; both read the
// same events, whole, in pages or not.
func TestConvIndexSparseAndDense(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite:"+t.TempDir()+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("alone", "a"), createdRec("c0", "0"), createdRec("c1", "1"), createdRec("c2", "2"))
	var recs []*agent.Record
	for range 600 {
		recs = append(recs, textRec("alone", "x"))
	}
	mustAppend(t, s, recs...)
	recs = nil
	for range 600 {
		recs = append(recs, textRec("c0", "x"), textRec("c1", "y"), textRec("c2", "z"))
	}
	mustAppend(t, s, recs...)
	for _, cid := range []string{"alone", "c0", "c2"} {
		want := wantConvSeqs(t, s, cid)
		for _, limit := range []int{0, 7, 1000} {
			if got := readConv(t, s, cid, limit); !slices.Equal(got, want) || len(want) != 600 {
				t.Errorf("%s in pages of %d: read %d events, want %d (600)", cid, limit, len(got), len(want))
			}
		}
	}
}
