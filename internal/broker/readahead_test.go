package broker_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// stallingSource serves one stored event, then stalls every later read
// until its context ends.
type stallingSource struct {
	reads    atomic.Int64
	stalled  chan struct{} // closed when a read stalls
	returned atomic.Bool   // a stalled read has returned
}

func (s *stallingSource) EncodedEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	if s.reads.Add(1) == 1 {
		return []agent.Encoded{{Seq: 1, ID: "e1", Kind: agent.KindAgent, Type: "created", JSON: []byte(`{}`)}}, nil
	}
	close(s.stalled)
	<-ctx.Done()
	// A query takes a moment to notice: this one yields, giving a Close
	// that did not wait for it every chance to return first.
	for range 100 {
		runtime.Gosched()
	}
	s.returned.Store(true)
	return nil, ctx.Err()
}

func (s *stallingSource) Bounds(context.Context) (int64, int64, error) { return 0, 1, nil }
func (s *stallingSource) ConversationPruned(context.Context, string) (int64, error) {
	return 0, nil
}
func (s *stallingSource) Epoch() string { return "e" }

// TestCloseEndsTheReadAhead: a subscription closed while it reads its
// next page ahead cancels that read and returns only once it has ended,
// so no query of a closed subscription runs on (it outlived the store's
// Close in a test, whose temp directory then could not be removed).
func TestCloseEndsTheReadAhead(t *testing.T) {
	src := &stallingSource{stalled: make(chan struct{})}
	b := broker.New(src, nil)
	sub, err := b.Subscribe(t.Context(), broker.Stream{Kind: broker.StreamAll}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	it, err := sub.Next(t.Context())
	if err != nil || it.Event == nil || it.Event.Seq != 1 {
		t.Fatalf("first event %+v, %v", it, err)
	}
	select {
	case <-src.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("no read-ahead started after a stored page")
	}
	sub.Close()
	if !src.returned.Load() {
		t.Fatal("Close returned while its read-ahead was still running")
	}
}
