package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/testwait"
)

// liveWait bounds how long a test waits for an event to be published by
// another instance. It is far above the measured latency (about a
// millisecond, see BenchmarkCrossInstanceLatency) and far below
// eventlog.ListenIdle, so an event that arrives in time came through NOTIFY, not
// through the listener's idle catch-up.
const liveWait = 5 * time.Second

// postgresOnly returns the DSN of a fresh PostgreSQL schema, or skips when
// AGENTIK_TEST_NO_POSTGRES=1. An unreachable server fails the test.
func postgresOnly(t *testing.T) string {
	t.Helper()
	if os.Getenv("AGENTIK_TEST_NO_POSTGRES") == "1" {
		t.Skip("AGENTIK_TEST_NO_POSTGRES=1")
	}
	return postgresSchema(t)
}

// waitSeq waits until r has recorded seq (or more), at most liveWait: it
// re-reads the record at each publish.
func (r *recorder) waitSeq(t *testing.T, seq int64) time.Duration {
	t.Helper()
	start := time.Now()
	bound := time.NewTimer(liveWait)
	defer bound.Stop()
	for {
		grew := r.next()
		evs := r.events()
		last := int64(0)
		if len(evs) > 0 {
			last = evs[len(evs)-1].Seq
		}
		if last >= seq {
			return time.Since(start)
		}
		select {
		case <-grew:
		case <-bound.C:
			t.Fatalf("after %v the last published seq is %d, want %d", liveWait, last, seq)
		}
	}
}

// sameLog fails unless got is exactly the stored log: every seq once, in
// order, with the stored JSON.
func sameLog(t *testing.T, name string, got, stored []agent.AllEvent) {
	t.Helper()
	for i := range max(len(got), len(stored)) {
		switch {
		case i >= len(got):
			t.Fatalf("%s: published %d events, stored %d: seq %d never published", name, len(got), len(stored), stored[i].Seq)
		case i >= len(stored):
			t.Fatalf("%s: published %d events, stored %d: extra seq %d", name, len(got), len(stored), got[i].Seq)
		case i > 0 && got[i].Seq <= got[i-1].Seq:
			t.Fatalf("%s: published seq %d after %d", name, got[i].Seq, got[i-1].Seq)
		case got[i].Seq != stored[i].Seq:
			t.Fatalf("%s: published[%d] has seq %d, stored %d", name, i, got[i].Seq, stored[i].Seq)
		}
		g, err := json.Marshal(got[i])
		if err != nil {
			t.Fatal(err)
		}
		w, err := json.Marshal(stored[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("%s: seq %d published as\n%s\nstored as\n%s", name, got[i].Seq, g, w)
		}
	}
}

// appendFromBoth appends to conversation c1 from workers goroutines on
// each of a and b at once, each making each appends (every third with a
// user message and more text).
func appendFromBoth(t *testing.T, a, b *Store, workers, each int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 2 * workers {
		s := []*Store{a, b}[w%2]
		wg.Go(func() {
			for i := range each {
				recs := []*agent.Record{textRec("c1", fmt.Sprint(w, i))}
				if i%3 == 0 {
					recs = append(recs, userRec("c1", "m", ""), textRec("c1", "after"))
				}
				if err := s.Append(t.Context(), recs...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPostgresInstances appends from two stores on one PostgreSQL schema
// at once, as two agentik instances would: the seqs stay gapless, and each
// instance publishes the whole log, its own events and the other's, every
// seq exactly once and in order, with the stored payloads.
func TestPostgresInstances(t *testing.T) {
	dsn := postgresOnly(t)
	recs := []*recorder{{}, {}}
	a := open(t, dsn, Options{Publish: recs[0].publish})
	b := open(t, dsn, Options{Publish: recs[1].publish})
	if a.Epoch() != b.Epoch() {
		t.Errorf("epochs differ on one database: %q, %q", a.Epoch(), b.Epoch())
	}
	mustAppend(t, a, createdRec("c1", ""))
	const workers, each = 8, 30 // per store
	appendFromBoth(t, a, b, workers, each)
	if t.Failed() {
		return
	}
	_, head, err := a.Bounds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	stored := allEvents(t, a)
	if int64(len(stored)) != head || stored[len(stored)-1].Seq != head {
		t.Fatalf("stored %d events up to seq %d: not gapless", len(stored), head)
	}
	for i, r := range recs {
		r.waitSeq(t, head)
		sameLog(t, []string{"a", "b"}[i], r.events(), stored)
	}
	c, err := b.Conversation(t.Context(), "c1")
	if want := 2 * workers * ((each + 2) / 3); err != nil || c.MessageCount != want {
		t.Errorf("message_count %d (%v), want %d", c.MessageCount, err, want)
	}
	if a.wr.Stats.Batches == 0 || b.wr.Stats.Batches == 0 {
		t.Errorf("batches committed: a %d, b %d; want both writers to have written", a.wr.Stats.Batches, b.wr.Stats.Batches)
	}
}

// TestPostgresForeignEventLive: events another instance commits reach this
// instance's subscribers while it appends nothing itself, and do not reach
// a store on another schema of the same database.
func TestPostgresForeignEventLive(t *testing.T) {
	dsn := postgresOnly(t)
	var seen, other recorder
	a := open(t, dsn, Options{Publish: seen.publish})
	b := open(t, dsn, Options{})
	open(t, postgresOnly(t), Options{Publish: other.publish})

	mustAppend(t, b, createdRec("c1", "from b"))
	mustAppend(t, b, textRec("c1", "one"), userRec("c1", "two", "k"))
	took := seen.waitSeq(t, 3)
	t.Logf("3 events of b published by a after %v", took)
	sameLog(t, "a", seen.events(), allEvents(t, b))
	if a.wr.Stats.Batches != 0 {
		t.Errorf("a committed %d batches, want none", a.wr.Stats.Batches)
	}
	if evs := other.events(); len(evs) != 0 {
		t.Errorf("a store on another schema published %d events of this one", len(evs))
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// logged fails unless logs hold want, and then shows them.
func logged(logs *syncBuffer, want string) error {
	if got := logs.String(); !strings.Contains(got, want) {
		return fmt.Errorf("%s not in the logs:\n%s", want, got)
	}
	return nil
}

// TestPostgresListenerReconnect kills the listener's connection: the
// instance logs it, reconnects, and publishes what was committed meanwhile
// and afterwards, each seq once and in order. While its listener is down,
// an Append of its own still publishes, before it returns, the other
// instance's events below it.
func TestPostgresListenerReconnect(t *testing.T) {
	dsn := postgresOnly(t)
	var seen recorder
	var logs syncBuffer
	a := open(t, dsn, Options{Publish: seen.publish, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	b := open(t, dsn, Options{})
	mustAppend(t, b, createdRec("c1", ""))
	seen.waitSeq(t, 1)

	pid := a.listenPID.Load()
	var killed bool
	if err := b.w.Raw("SELECT pg_terminate_backend(?)", pid).Scan(&killed).Error; err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, killed, err)
	}
	start := time.Now()
	testwait.ForErr(t, "the lost listener logged", func() error { return logged(&logs, "msg=event_listener_lost") })
	// The listener now waits eventlog.ListenBackoffMin before reconnecting.
	mustAppend(t, b, textRec("c1", "b while down"))
	mustAppend(t, a, textRec("c1", "a while down"))
	if got := seqs(seen.events()); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("published when a's Append returned: seqs %v, want [1 2 3]", got)
	}
	testwait.ForErr(t, "the reconnect logged", func() error { return logged(&logs, "msg=event_listener_reconnected") })
	t.Logf("listener back after %v", time.Since(start))
	mustAppend(t, b, textRec("c1", "after"))
	seen.waitSeq(t, 4)
	sameLog(t, "a", seen.events(), allEvents(t, b))
	if got := a.listenPID.Load(); got == pid {
		t.Errorf("listener still on backend %d", pid)
	}
}

// TestPostgresConcurrentOpen starts several instances on a fresh schema at
// once: the migration must not race.
func TestPostgresConcurrentOpen(t *testing.T) {
	t.Parallel()
	if os.Getenv("AGENTIK_TEST_NO_POSTGRES") != "" {
		t.Skip("AGENTIK_TEST_NO_POSTGRES is set")
	}
	dsn := postgresSchema(t)
	const n = 4
	errs := make(chan error, n)
	stores := make(chan *Store, n)
	for range n {
		go func() {
			st, err := Open(context.Background(), dsn, Options{})
			errs <- err
			stores <- st
		}()
	}
	epochs := map[string]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("open: %v", err)
		}
		if st := <-stores; st != nil {
			epochs[st.Epoch()] = true
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	if len(epochs) != 1 {
		t.Errorf("instances disagree on the epoch: %v", epochs)
	}
}

// TestPostgresBroadcast: a Broadcast reaches the other instance's
// OnBroadcast func of its topic, not the sender's own, nor another
// topic's; a topic that is not one word or a body too big for a
// notification is refused.
func TestPostgresBroadcast(t *testing.T) {
	dsn := postgresOnly(t)
	var ra, rb recorder
	a := open(t, dsn, Options{Publish: ra.publish})
	b := open(t, dsn, Options{Publish: rb.publish})
	got := map[string]chan string{"a": make(chan string, 4), "b": make(chan string, 4), "other": make(chan string, 4)}
	a.OnBroadcast("cancel", func(body string) { got["a"] <- body })
	b.OnBroadcast("cancel", func(body string) { got["b"] <- body })
	b.OnBroadcast("other", func(body string) { got["other"] <- body })
	ctx := t.Context()
	if sent, err := a.Broadcast(ctx, "cancel", `{"id":1} with spaces`); err != nil || !sent {
		t.Fatal(sent, err)
	}
	select {
	case body := <-got["b"]:
		if body != `{"id":1} with spaces` {
			t.Errorf("b got %q", body)
		}
	case <-time.After(liveWait):
		t.Fatal("b got nothing")
	}
	// Notifications reach a listener in commit order: once a has b's
	// answer, its own earlier one would have come first.
	if sent, err := b.Broadcast(ctx, "cancel", "back"); err != nil || !sent {
		t.Fatal(sent, err)
	}
	select {
	case body := <-got["a"]:
		if body != "back" {
			t.Errorf("a got %q, want only b's broadcast", body)
		}
	case <-time.After(liveWait):
		t.Fatal("a got nothing")
	}
	if len(got["other"]) != 0 || len(got["a"]) != 0 || len(got["b"]) != 0 {
		t.Errorf("left over: other %d, a %d, b %d", len(got["other"]), len(got["a"]), len(got["b"]))
	}
	for _, bad := range []struct{ topic, body string }{{"two words", "x"}, {"", "x"}, {"cancel", strings.Repeat("x", maxBroadcast)}} {
		if _, err := a.Broadcast(ctx, bad.topic, bad.body); err == nil {
			t.Errorf("Broadcast(%q, %d bytes) = nil, want an error", bad.topic, len(bad.body))
		}
	}
}
