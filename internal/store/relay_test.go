package store

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// startRelay serves a relay on loopback for the test's life.
func startRelay(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ServeRelay(ln) }()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// relayInstances appends from two stores on one schema at once and checks
// that each published the whole log exactly once, in order.
func relayInstances(t *testing.T, dsn, relay string) {
	t.Helper()
	recs := []*recorder{{}, {}}
	a := open(t, dsn, Options{Publish: recs[0].publish, Relay: relay})
	b := open(t, dsn, Options{Publish: recs[1].publish, Relay: relay})
	mustAppend(t, a, createdRec("c1", ""))
	const workers, each = 4, 25
	appendFromBoth(t, a, b, workers, each)
	if t.Failed() {
		return
	}
	_, head, err := a.Bounds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stored := allEvents(t, a)
	for i, r := range recs {
		r.waitSeq(t, head)
		sameLog(t, []string{"a", "b"}[i], r.events(), stored)
	}
}

// TestPostgresRelay: with the experimental relay, two instances publish
// each other's events exactly once and in order, and the relay brought
// them: the listener's fallback read waits longer than the test does.
func TestPostgresRelay(t *testing.T) {
	dsn := postgresOnly(t)
	old := relayGrace
	relayGrace = 10 * liveWait // a notice never reads the log in time
	t.Cleanup(func() { relayGrace = old })
	relayInstances(t, dsn, startRelay(t))
}

// TestPostgresRelayDown: a relay that is not there loses nothing: every
// notified seq is read from the log after relayGrace.
func TestPostgresRelayDown(t *testing.T) {
	dsn := postgresOnly(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections are refused
	relayInstances(t, dsn, addr)
}

// TestRelayFrame: a frame carries the events' seq, id, kind, conversation,
// owner and bytes, and the type is read back from the bytes.
func TestRelayFrame(t *testing.T) {
	var evs []agent.Encoded
	for i, typ := range []string{agent.EventAppendText, agent.EventEnd} {
		e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: int64(7 + i), ID: fmt.Sprint("id", i), ConversationID: "c", Date: time.Unix(1, 0).UTC(), Event: &agent.Event{Type: typ, Text: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		e.Owner = "u"
		evs = append(evs, e)
	}
	got, err := decodeFrame(encodeFrame(evs)[4:])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("%d events back, want %d", len(got), len(evs))
	}
	for i := range got {
		g, w := got[i], evs[i]
		if g.Seq != w.Seq || g.ID != w.ID || g.Kind != w.Kind || g.ConversationID != w.ConversationID || g.Owner != w.Owner || g.Type != w.Type || string(g.JSON) != string(w.JSON) || string(g.Inner()) != string(w.Inner()) {
			t.Errorf("event %d: got %+v, want %+v", i, g, w)
		}
	}
	if _, err := decodeFrame([]byte{5, 1}); err == nil {
		t.Error("a truncated frame decodes")
	}
}

// TestRelayBurst: the frames read in at once are published as batches of
// contiguous seqs, one per run: two commits in a row are one batch, a gap
// (another instance's commit still on its way) starts the next.
func TestRelayBurst(t *testing.T) {
	frame := func(seqs ...int64) []byte {
		var evs []agent.Encoded
		for _, seq := range seqs {
			e, err := agent.Encode(agent.AllEvent{Kind: agent.KindConversation, Seq: seq, ID: fmt.Sprint("e", seq), ConversationID: "c", Event: &agent.Event{Type: agent.EventAppendText, Text: "x"}})
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, e)
		}
		return encodeFrame(evs)
	}
	var buf bytes.Buffer
	for _, f := range [][]byte{frame(1, 2), frame(3), frame(5, 6), frame(7)} {
		buf.Write(f)
	}
	r := bufio.NewReaderSize(&buf, relayReadBuffer)
	batches, err := readBurst(r)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int64
	for _, b := range batches {
		var seqs []int64
		for _, e := range b {
			seqs = append(seqs, e.Seq)
		}
		got = append(got, seqs)
	}
	if fmt.Sprint(got) != "[[1 2 3] [5 6 7]]" {
		t.Errorf("batches %v, want [[1 2 3] [5 6 7]]", got)
	}
}
