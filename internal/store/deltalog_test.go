package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// sideFiles lists the delta log's segment files of the store at dir/a.db.
func sideFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "a.db-deltas", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// reopenEdited closes s (at dir/a.db), changes its only segment file with
// edit, and opens it again.
func reopenEdited(t *testing.T, s *Store, dir string, edit func([]byte) []byte) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	file := sideFiles(t, dir)[0]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast})
}

// eventRows counts agent_event's rows.
func eventRows(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.r.Raw("SELECT COUNT(*) FROM agent_event").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDeltaLogHoldsDeltas: text deltas committed alone go to the delta log,
// not agent_event, and every read of the log finds them, each once, in seq
// order, merged with agent_event's events: the whole log in pages of any
// size or byte bound, a conversation's events, an id's seq, the head.
func TestDeltaLogHoldsDeltas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast, PageBytes: 700})
	mustAppend(t, s, createdRec("c1", "one"), createdRec("c2", "two"), userRec("c1", "hi", ""))
	var last *agent.Record
	for i := range 30 {
		last = textRec([]string{"c1", "c2"}[i%2], "tok")
		mustAppend(t, s, last)
		if i%7 == 0 {
			mustAppend(t, s, convRec("c1", &agent.Event{Type: agent.EventToolCall, CallID: "t", Name: "x__y", Arguments: "{}"}))
		}
	}
	if n := eventRows(t, s); n != 3+5 {
		t.Errorf("agent_event holds %d rows, want the 8 events that are not deltas", n)
	}
	if s.side.Count() != 30 {
		t.Errorf("the delta log holds %d records, want 30", s.side.Count())
	}
	all := seqs(allEvents(t, s))
	if want := 3 + 5 + 30; len(all) != want || !slices.IsSorted(all) || all[0] != 1 || all[len(all)-1] != int64(want) {
		t.Fatalf("the whole log reads %v, want 1..%d", all, want)
	}
	for _, limit := range []int{1, 2, 5, 7, 100} {
		var got []int64
		for after := int64(0); ; {
			page, err := s.EncodedEvents(t.Context(), agent.EventQuery{After: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, e := range page {
				got = append(got, e.Seq)
			}
			after = page[len(page)-1].Seq
		}
		if !slices.Equal(got, all) {
			t.Errorf("in pages of %d (700 bytes at most): %v, want %v", limit, got, all)
		}
	}
	for _, limit := range []int{0, 1, 3, 50} {
		if got, want := readConv(t, s, "c2", limit), wantConvSeqs(t, s, "c2"); !slices.Equal(got, want) || len(want) != 15 {
			t.Errorf("c2 in pages of %d: %v, want %v (15)", limit, got, want)
		}
	}
	seq, err := s.EventSeq(t.Context(), last.Event.ID)
	if err != nil || seq != last.Event.Seq {
		t.Errorf("EventSeq of the last delta: %d, %v; want %d", seq, err, last.Event.Seq)
	}
	if _, head, err := s.Bounds(t.Context()); err != nil || head != int64(len(all)) {
		t.Errorf("Bounds head %d, %v; want %d", head, err, len(all))
	}
	if len(sideFiles(t, dir)) != 1 {
		t.Errorf("segments %v, want one", sideFiles(t, dir))
	}
}

// TestTurnFirstTokenInDeltaLog: the runner's first append of an answer,
// its start (start_response or start_reasoning) with the first text
// delta in one request, runs no SQLite transaction in fast mode: it goes
// to the delta log as the later deltas do, so a turn's first token waits
// for no transaction (issues 47 and 54: the mix's tail was its turns'
// first tokens). The events read back whole and in order, before and
// after a restart (whose index entries the crash's path writes).
func TestTurnFirstTokenInDeltaLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "one"), userRec("c1", "hi", ""))
	rows := eventRows(t, s)
	reasoning := convRec("c1", &agent.Event{Type: agent.EventStartReasoning})
	mustAppend(t, s, reasoning, textRec("c1", "hmm"))
	response := convRec("c1", &agent.Event{Type: agent.EventStartResponse})
	mustAppend(t, s, response, textRec("c1", "t1"))
	mustAppend(t, s, textRec("c1", " t2"))
	if n := eventRows(t, s); n != rows {
		t.Errorf("agent_event holds %d rows after the answer's starts and deltas, want %d: a start went through a transaction", n, rows)
	}
	if n := s.side.Count(); n != 5 {
		t.Errorf("the delta log holds %d records, want the 5 of the answer", n)
	}
	check := func(when string) {
		t.Helper()
		evs, err := s.Events(t.Context(), agent.EventQuery{ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range evs {
			types = append(types, e.Event.Type)
		}
		want := []string{agent.EventMessage, agent.EventStartReasoning, agent.EventAppendText, agent.EventStartResponse, agent.EventAppendText, agent.EventAppendText}
		if !slices.Equal(types, want) {
			t.Errorf("%s: c1 reads %v, want %v", when, types, want)
		}
		if got, want := readConv(t, s, "c1", 2), wantConvSeqs(t, s, "c1"); !slices.Equal(got, want) {
			t.Errorf("%s: c1 in pages of 2: %v, want %v", when, got, want)
		}
		if seq, err := s.EventSeq(t.Context(), response.Event.ID); err != nil || seq != response.Event.Seq {
			t.Errorf("%s: EventSeq of start_response: %d, %v; want %d", when, seq, err, response.Event.Seq)
		}
	}
	check("before a restart")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast})
	check("after a restart")
	// A delete's SQLite side alone, then a crash: opening redacts the
	// starts as it does the text (in place, no longer than they were).
	if err := s.w.Exec("DELETE FROM conversation WHERE id = ?", "c1").Error; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast})
	evs := allEvents(t, s)
	for _, ev := range evs[len(evs)-5:] {
		if e := ev.Event; e == nil || e.Type != EventRedacted {
			t.Errorf("seq %d after the delete reads %+v, want it redacted", ev.Seq, ev.Event)
		}
	}
}

// TestDeltaLogCutsUnfinishedCommit: a commit whose last frame did not reach
// the file (a crash mid-write) is cut whole at open, and the seqs go on
// from the last whole commit.
func TestDeltaLogCutsUnfinishedCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("c1", "one"))
	mustAppend(t, s, textRec("c1", "a"))
	mustAppend(t, s, textRec("c1", "b"), textRec("c1", "c")) // one request: one commit of two frames
	// The last frame (the commit's end) torn: the commit's first frame is
	// whole but must go too.
	s = reopenEdited(t, s, dir, func(b []byte) []byte { return b[:len(b)-5] })
	if got := seqs(allEvents(t, s)); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("after the torn commit the log reads %v, want [1 2]", got)
	}
	mustAppend(t, s, textRec("c1", "d"))
	if got := seqs(allEvents(t, s)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("after a new delta the log reads %v, want [1 2 3]", got)
	}
	if got := readConv(t, s, "c1", 0); !slices.Equal(got, []int64{2, 3}) {
		t.Errorf("c1 reads %v, want [2 3]", got)
	}
}

// TestDeltaLogRedactsAfterCrash: a conversation deleted in SQLite whose
// deltas were not rewritten yet (a crash between the two) has them
// redacted at open; a redaction torn mid-write is finished at open.
func TestDeltaLogRedactsAfterCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast})
	mustAppend(t, s, createdRec("gone", "g"), createdRec("kept", "k"))
	mustAppend(t, s, textRec("gone", "secret-one"))
	mustAppend(t, s, textRec("kept", "visible"))
	mustAppend(t, s, textRec("kept", "secret-two"))
	// The delete's SQLite side alone.
	if err := s.w.Exec("DELETE FROM conversation WHERE id = ?", "gone").Error; err != nil {
		t.Fatal(err)
	}
	// A redaction of kept's last delta torn: its payload half rewritten.
	s = reopenEdited(t, s, dir, func(b []byte) []byte {
		copy(b[strings.LastIndex(string(b), "secret-two"):], "XXXXX")
		return b
	})
	evs := allEvents(t, s)
	if len(evs) != 5 {
		t.Fatalf("the log reads %d events, want 5", len(evs))
	}
	for _, ev := range evs {
		j, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(j), "secret") || strings.Contains(string(j), "XXXXX") {
			t.Errorf("seq %d still says %s", ev.Seq, j)
		}
	}
	if e := evs[3].Event; e == nil || e.Text != "visible" {
		t.Errorf("kept's first delta reads %+v, want its text", evs[3].Event)
	}
	for _, k := range []int{2, 4} {
		if e := evs[k].Event; e == nil || e.Type != EventRedacted {
			t.Errorf("seq %d reads %+v, want it redacted", evs[k].Seq, evs[k].Event)
		}
	}
}

// TestDeltaLogPrune: Prune deletes the delta log's old records with
// agent_event's (whole segments as files), counts them, and a cursor below
// them is told they are gone.
func TestDeltaLogPrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := newClock()
	s := open(t, "sqlite:"+dir+"/a.db", Options{Mode: ModeFast, Now: clk.now})
	mustAppend(t, s, createdRec("c1", "one"))
	// Fill more than one segment with old deltas.
	big := strings.Repeat("x", 64<<10)
	for range eventlog.SegmentMax/(64<<10) + 2 {
		mustAppend(t, s, textRec("c1", big))
	}
	old := s.side.Head()
	if n := len(sideFiles(t, dir)); n < 2 {
		t.Fatalf("%d segments, want at least 2", n)
	}
	clk.advance(time.Hour)
	cut := clk.now()
	mustAppend(t, s, textRec("c1", "new"), textRec("c1", "newer"))
	n, err := s.Prune(t.Context(), cut)
	if err != nil {
		t.Fatal(err)
	}
	if n != old {
		t.Errorf("Prune deleted %d events, want %d", n, old)
	}
	if got := seqs(allEvents(t, s)); !slices.Equal(got, []int64{old + 1, old + 2}) {
		t.Errorf("after Prune the log reads %v, want [%d %d]", got, old+1, old+2)
	}
	if got := readConv(t, s, "c1", 0); !slices.Equal(got, []int64{old + 1, old + 2}) {
		t.Errorf("after Prune c1 reads %v", got)
	}
	if n := len(sideFiles(t, dir)); n != 1 {
		t.Errorf("%d segments after Prune, want the last one", n)
	}
	pruned, _, err := s.Bounds(t.Context())
	if err != nil || pruned != old {
		t.Errorf("pruned through %d, %v; want %d", pruned, err, old)
	}
}
