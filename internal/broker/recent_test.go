package broker_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/store"
)

// countingSource counts the replay reads that reach the database.
type countingSource struct {
	*store.Store
	reads atomic.Int64
}

func (c *countingSource) EncodedEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	c.reads.Add(1)
	return c.Store.EncodedEvents(ctx, q)
}

func countingRig(t *testing.T) (*store.Store, *countingSource, *broker.Broker) {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := &countingSource{Store: st}
	b := broker.New(src, nil)
	if err := st.Start(context.Background(), b.PublishEncoded, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, src, b
}

// replayAll subscribes after cursor and reads until caught up.
func replayAll(t *testing.T, b *broker.Broker, stream broker.Stream, after int64) []*agent.Encoded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := b.Subscribe(ctx, stream, after, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out []*agent.Encoded
	for {
		it, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if it.CaughtUp {
			return out
		}
		out = append(out, it.Event)
	}
}

// TestResumeFromRecentSkipsTheDatabase: many subscribers resuming from a
// cursor the broker still holds in memory replay without a query each,
// and get exactly what the database holds.
func TestResumeFromRecentSkipsTheDatabase(t *testing.T) {
	st, src, b := countingRig(t)
	ctx := context.Background()
	if err := st.Append(ctx, created("c")); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := st.Append(ctx, text("c", strings.Repeat("x", i))); err != nil {
			t.Fatal(err)
		}
	}
	want, err := st.EncodedEvents(ctx, agent.EventQuery{After: 10, ConversationID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	src.reads.Store(0)
	for range 100 {
		got := replayAll(t, b, broker.Stream{Kind: broker.StreamConversation, ConversationID: "c"}, 10)
		if len(got) != len(want) {
			t.Fatalf("replayed %d events, the database holds %d", len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != want[i].Seq || string(got[i].JSON) != string(want[i].JSON) {
				t.Fatalf("event %d: %s, the database holds %s", i, got[i].JSON, want[i].JSON)
			}
		}
	}
	if n := src.reads.Load(); n != 0 {
		t.Errorf("100 resumes read the database %d times, want 0", n)
	}
}

// TestResumeAcrossDeleteReadsRedactedEvents: after a delete the broker
// no longer replays the deleted conversation's events from memory: the
// database's redacted ones are what a resume gets.
func TestResumeAcrossDeleteReadsRedactedEvents(t *testing.T) {
	st, src, b := countingRig(t)
	ctx := context.Background()
	if err := st.Append(ctx, created("c"), text("c", "secret")); err != nil {
		t.Fatal(err)
	}
	del := &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: time.Now(), ConversationID: "c",
		Agent: &agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: "c"}}}
	if err := st.Append(ctx, del); err != nil {
		t.Fatal(err)
	}
	src.reads.Store(0)
	got := replayAll(t, b, broker.Stream{Kind: broker.StreamAll}, 0)
	if len(got) != 3 {
		t.Fatalf("replayed %d events, want 3", len(got))
	}
	for _, e := range got {
		if strings.Contains(string(e.JSON), "secret") {
			t.Errorf("a resume after the delete replayed %s", e.JSON)
		}
	}
	if src.reads.Load() == 0 {
		t.Error("the replay across a delete never read the database")
	}
}

// TestTryNextAndReady: TryNext never waits for a live event; Ready fires
// once one is queued.
func TestTryNextAndReady(t *testing.T) {
	st, _, b := countingRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, ok, err := sub.TryNext(ctx); ok || err != nil {
		t.Fatalf("TryNext on an empty live subscription: ok %v, %v", ok, err)
	}
	if err := st.Append(ctx, created("c")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.Ready():
	case <-ctx.Done():
		t.Fatal("Ready never fired after a publish")
	}
	it, ok, err := sub.TryNext(ctx)
	if !ok || err != nil || it.Event.Kind != agent.KindAgent {
		t.Fatalf("TryNext after Ready: %+v %v %v", it, ok, err)
	}
}
