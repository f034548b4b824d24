package broker

import (
	"context"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestSubscribeReadySharesOneWakeup: subscriptions made with one ready
// channel all signal it, so one goroutine can serve them all.
func TestSubscribeReadySharesOneWakeup(t *testing.T) {
	b := New(nil, nil)
	ready := make(chan struct{}, 1)
	ctx := context.Background()
	s1, err := b.SubscribeReady(ctx, Stream{Kind: StreamConversation, ConversationID: "c1"}, -1, "", ready)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := b.SubscribeReady(ctx, Stream{Kind: StreamConversation, ConversationID: "c2"}, -1, "", ready)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Sub{s1, s2} {
		if s.Ready() != ready {
			t.Fatalf("sub %d has its own ready channel", i+1)
		}
	}
	b.PublishEncoded([]agent.Encoded{{Kind: agent.KindConversation, ConversationID: "c2", JSON: []byte(`{}`)}})
	select {
	case <-ready:
	default:
		t.Fatal("no wakeup on the shared channel")
	}
	if _, ok, _ := s1.TryNext(ctx); ok {
		t.Fatal("c1 got c2's event")
	}
	if _, ok, err := s2.TryNext(ctx); !ok || err != nil {
		t.Fatalf("c2: ok %v err %v", ok, err)
	}
	s1.Close()
	s2.Close()
}
