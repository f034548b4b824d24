package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

func ended(conv string) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: conv, Event: &agent.Event{Type: agent.EventEnd}}}
}

func onlyEnds(e *agent.Encoded) bool { return e.Type == agent.EventEnd }

// TestStreamOnly: a stream with Only gets only the events it accepts,
// live and replayed (from the recent ring and from the database), in
// order; the others are never queued, so a watcher that reads nothing
// while more than QueueLimit tokens stream is not dropped as slow.
func TestStreamOnly(t *testing.T) {
	st, b := rig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := st.Append(ctx, created("c")); err != nil {
		t.Fatal(err)
	}
	live, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll, Only: onlyEnds}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	// Turns of 1000 tokens and an end each, more tokens than a queue holds
	// and than the ring keeps: the first ends are read from the database.
	const turns, tokens = 6, 1000
	var ends []int64
	for turn := range turns {
		recs := make([]*agent.Record, 0, tokens+1)
		for i := range tokens {
			recs = append(recs, text("c", fmt.Sprint(turn, "/", i)))
		}
		if err := st.Append(ctx, append(recs, ended("c"))...); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int64(2+turn*(tokens+1)+tokens))
	}
	if turns*tokens <= broker.QueueLimit || turns*(tokens+1) <= broker.RecentLimit {
		t.Fatal("the test streams fewer tokens than a queue or the ring holds")
	}
	check := func(what string, sub *broker.Sub, caughtUp bool) {
		t.Helper()
		for _, want := range ends {
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if it.CaughtUp || it.Event.Seq != want || it.Event.Type != agent.EventEnd {
				t.Fatalf("%s: got %+v, want the end at seq %d", what, it, want)
			}
		}
		if caughtUp {
			if it, err := sub.Next(ctx); err != nil || !it.CaughtUp {
				t.Fatalf("%s: after the ends %+v, %v; want caught_up", what, it, err)
			}
		}
	}
	check("live", live, false)
	replay, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll, Only: onlyEnds}, 0, st.Epoch())
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	check("replay", replay, true)
}
