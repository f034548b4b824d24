package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// A conversation's replay on the event pool reads what the gorm path on
// the read pool reads, page by page (the byte bound too, an event larger
// than a chunk too), and a page of text events costs a few allocations,
// not several per event.
func TestConversationReplayOnTheEventPool(t *testing.T) {
	s := open(t, "sqlite:"+t.TempDir()+"/ev.db", Options{Mode: ModeFast, PageBytes: 8 << 10})
	if s.ev == nil {
		t.Fatal("no event pool on SQLite")
	}
	mustAppend(t, s, createdRec("c", "replay"), createdRec("d", "other"))
	var recs []*agent.Record
	for i := range 2500 {
		text := fmt.Sprintf(" t%d", i)
		if i == 1234 {
			text = strings.Repeat("x", 20<<10) // over a quarter of a chunk
		}
		recs = append(recs, textRec("c", text), textRec("d", text))
		if i%500 == 0 {
			recs = append(recs, userRec("c", `say "hi" \ there`, fmt.Sprint("k", i)))
		}
	}
	mustAppend(t, s, recs...)
	pages := func(limit int) ([]agent.Encoded, int) {
		var got []agent.Encoded
		n := 0
		for after := int64(0); ; n++ {
			page, err := s.EncodedEvents(t.Context(), agent.EventQuery{After: after, ConversationID: "c", Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if limit == 0 || len(page) == 0 {
				return got, n
			}
			after = page[len(page)-1].Seq
		}
	}
	for _, limit := range []int{0, 1000} {
		got, n := pages(limit)
		ev := s.ev
		s.ev = nil // the gorm path
		want, wantN := pages(limit)
		s.ev = ev
		if len(got) != len(want) || n != wantN || len(got) != 2500+5 {
			t.Fatalf("limit %d: %d events in %d pages, gorm path %d in %d (want 2505)", limit, len(got), n, len(want), wantN)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.Seq != w.Seq || g.ID != w.ID || g.ID == "" || g.Kind != w.Kind || g.ConversationID != w.ConversationID || g.Type != w.Type || g.Owner != w.Owner ||
				string(g.JSON) != string(w.JSON) || string(g.Inner()) != string(w.Inner()) {
				t.Fatalf("limit %d, event %d: %+v, want %+v", limit, i, g, w)
			}
		}
	}
	q := agent.EventQuery{After: 0, ConversationID: "c", Limit: 1000}
	allocs := testing.AllocsPerRun(5, func() {
		if page, err := s.EncodedEvents(t.Context(), q); err != nil || len(page) == 0 {
			t.Fatal(len(page), err)
		}
	})
	if allocs > 100 {
		t.Errorf("a page of up to 1000 events: %.0f allocations", allocs)
	}
}
