package broker_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/store"
)

// TestPrunedCursorIsJudgedPerConversation: pruning one conversation's
// events does not break cursors on another; a pruned resync on the whole
// log says where the retained log starts.
func TestPrunedCursorIsJudgedPerConversation(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "a.db"), store.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := broker.New(st, nil)
	ctx := t.Context()
	app := func(recs ...*agent.Record) {
		t.Helper()
		if err := st.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}

	app(created("old"), text("old", "a"), text("old", "b")) // seqs 1-3
	app(created("both"), text("both", "c"))                 // 4-5
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	app(text("both", "d"))                // 6
	app(created("new"), text("new", "e")) // 7-8
	if n, err := st.Prune(ctx, now); err != nil || n != 5 {
		t.Fatalf("pruned %d, %v; want 5", n, err)
	}

	subscribe := func(stream broker.Stream, after int64) (*broker.Sub, *broker.ResyncError) {
		t.Helper()
		s, err := b.Subscribe(ctx, stream, after, "")
		var re *broker.ResyncError
		if errors.As(err, &re) {
			return nil, re
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s, nil
	}
	conv := func(id string) broker.Stream {
		return broker.Stream{Kind: broker.StreamConversation, ConversationID: id}
	}

	// "new" lost nothing: from 0 it replays its one conversation event.
	s, re := subscribe(conv("new"), 0)
	if re != nil {
		t.Fatalf("conversation none of whose events were pruned: %v", re)
	}
	it, err := s.Next(ctx)
	if err != nil || it.Event.Seq != 8 {
		t.Fatalf("first replayed event: %+v, %v; want seq 8", it, err)
	}
	// "both" lost its start: from 0 is pruned, from just before its oldest
	// kept event is fine.
	if _, re := subscribe(conv("both"), 0); re == nil || re.Reason != broker.ReasonPruned {
		t.Fatalf("a conversation that lost events: %v, want pruned", re)
	}
	if _, re := subscribe(conv("both"), 5); re != nil {
		t.Fatalf("cursor at the conversation's oldest kept event: %v", re)
	}
	if _, re := subscribe(conv("old"), 0); re == nil || re.Reason != broker.ReasonPruned {
		t.Fatalf("a conversation with nothing kept: %v, want pruned", re)
	}
	// The whole log says where it starts.
	if _, re := subscribe(broker.Stream{Kind: broker.StreamAll}, 0); re == nil || re.Reason != broker.ReasonPruned || re.Start != 5 {
		t.Fatalf("all from 0: %+v, want pruned with start 5", re)
	}
	if _, re := subscribe(broker.Stream{Kind: broker.StreamAll}, 5); re != nil {
		t.Fatalf("all from start: %v", re)
	}
}
