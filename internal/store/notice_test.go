package store

import (
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// noticeEv is a stored event with the given fields.
func noticeEv(seq int64, id, conv, owner, json string) agent.Encoded {
	e := agent.StoredEvent(seq, id, agent.KindConversation, conv, []byte(json))
	e.Owner = owner
	return e
}

// TestNoticeCarriesEvents: a commit's notice carries its events, any bytes
// a stored field may hold (spaces, colons, newlines, non-ASCII), and
// reads back the same; events that do not fit in maxNotice are left out
// from the first that does not, so what it carries is a contiguous
// prefix; a notice without events, or an old one, reads as before.
func TestNoticeCarriesEvents(t *testing.T) {
	evs := []agent.Encoded{
		noticeEv(41, "id 1:x", "c\n1", "", `{"seq":41,"event":{"type":"append_text","text":"a: b\n"}}`),
		noticeEv(42, "", "", "u:1 ü", `{}`),
		noticeEv(43, "3", "c:1", "o", `{"text":"`+strings.Repeat("é", 10)+`"}`),
	}
	p := notice(43, "inst", evs)
	seq, from, carried, ok := parseNotice(p)
	if !ok || seq != 43 || from != "inst" {
		t.Fatalf("parseNotice(%q) = %d %q %v", p, seq, from, ok)
	}
	got, err := noticeEvents(carried)
	if err != nil || len(got) != len(evs) {
		t.Fatalf("noticeEvents: %d events, %v", len(got), err)
	}
	for i := range evs {
		g, w := got[i], evs[i]
		if g.Seq != w.Seq || g.ID != w.ID || g.Kind != w.Kind || g.ConversationID != w.ConversationID || g.Owner != w.Owner || string(g.JSON) != string(w.JSON) {
			t.Errorf("event %d: got %+v, want %+v", i, g, w)
		}
	}

	// Too many to carry: a prefix, within the bound.
	var many []agent.Encoded
	for i := range 200 {
		many = append(many, noticeEv(int64(100+i), "id", "c1", "o", `{"event":{"type":"append_text","text":"`+strings.Repeat("x", 100)+`"}}`))
	}
	p = notice(299, "inst", many)
	if len(p) > maxNotice {
		t.Fatalf("notice of %d bytes, bound %d", len(p), maxNotice)
	}
	_, _, carried, _ = parseNotice(p)
	got, err = noticeEvents(carried)
	if err != nil || len(got) == 0 || len(got) == len(many) || got[0].Seq != 100 || got[len(got)-1].Seq != int64(99+len(got)) {
		t.Fatalf("a commit too large: carried %d of %d events (%v), want a prefix", len(got), len(many), err)
	}
	// One event too large: none carried.
	big := noticeEv(7, "id", "c1", "o", `{"text":"`+strings.Repeat("x", maxNotice)+`"}`)
	if _, _, carried, _ := parseNotice(notice(7, "inst", []agent.Encoded{big})); carried != "" {
		t.Errorf("an event over the bound carried (%d bytes)", len(carried))
	}
	// Without events, and the notice of an earlier version.
	for _, p := range []string{notice(9, "inst", nil), "9 inst"} {
		if seq, from, carried, ok := parseNotice(p); !ok || seq != 9 || from != "inst" || carried != "" {
			t.Errorf("parseNotice(%q) = %d %q %q %v", p, seq, from, carried, ok)
		}
	}
	// Malformed events are an error (the log is read instead).
	for _, bad := range []string{"x 1:a1:b1:c1:d2:{}", "5 9:a", "5 1:a1:b1:c1:d", "5 1:a1:b1:c1:d2:{}7 1:a1:b1:c1:d2:{}", "5 -1:"} {
		if evs, err := noticeEvents(bad); err == nil {
			t.Errorf("noticeEvents(%q) = %v, want an error", bad, evs)
		}
	}
}

// TestPostgresNoticePublishes: another instance publishes a small commit
// from its notification alone, without reading the log; a commit too
// large to carry is read from the log, each event once, in order.
func TestPostgresNoticePublishes(t *testing.T) {
	dsn := postgresOnly(t)
	var seen recorder
	a := open(t, dsn, Options{Publish: seen.publish})
	b := open(t, dsn, Options{})
	mustAppend(t, b, createdRec("c1", "from b"))
	seen.waitSeq(t, 1)
	reads := a.logReads.Load()
	mustAppend(t, b, textRec("c1", "one"), userRec("c1", "two", "k"))
	seen.waitSeq(t, 3)
	if n := a.logReads.Load() - reads; n != 0 {
		t.Errorf("a read the log %d times for a commit its notice carried", n)
	}
	var recs []*agent.Record
	for i := range 100 {
		recs = append(recs, textRec("c1", strings.Repeat("y", 200)+string(rune('a'+i%26))))
	}
	mustAppend(t, b, recs...)
	seen.waitSeq(t, 103)
	if n := a.logReads.Load() - reads; n == 0 {
		t.Error("a commit too large for its notice was not read from the log")
	}
	sameLog(t, "a", seen.events(), allEvents(t, b))
}
