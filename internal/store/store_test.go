package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
	"github.com/agentik/agentik/internal/testwait"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConversationLifecycle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		ctx := t.Context()

		rec := createdRec("c1", "first")
		mustAppend(t, s, rec)
		t0 := clk.now()
		want := agent.Conversation{ID: "c1", Title: "first", CreatedAt: t0, UpdatedAt: t0, Owner: agent.LocalUser}
		if diff := cmp.Diff(want, *rec.Conversation); diff != "" {
			t.Errorf("rec.Conversation after Append (-want +got):\n%s", diff)
		}
		got, err := s.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Conversation (-want +got):\n%s", diff)
		}

		clk.advance(time.Second)
		mustAppend(t, s, renamedRec("c1", "renamed"))
		got, err = s.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		want.Title, want.UpdatedAt, want.UserTitled = "renamed", clk.now(), true // a rename is a user's title
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Conversation after rename (-want +got):\n%s", diff)
		}

		user := userRec("c1", "hello", "k1")
		mustAppend(t, s, user, &agent.Record{
			Event:  textRec("c1", "x").Event,
			Memory: []agent.ModelMessage{{Role: agent.RoleUser, Content: []agent.Content{agent.Text("hello")}}},
		})
		mustAppend(t, s, deletedRec("c1"))

		if _, err := s.Conversation(ctx, "c1"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("Conversation after delete: err = %v, want not_found", err)
		}
		if _, err := s.Messages(ctx, agent.MessageQuery{ConversationID: "c1"}); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("Messages after delete: err = %v, want not_found", err)
		}
		if _, err := s.Memory(ctx, "c1"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("Memory after delete: err = %v, want not_found", err)
		}
		if _, err := s.MessageByClientID(ctx, "c1", "k1"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("MessageByClientID after delete: err = %v, want not_found", err)
		}
		// The cascade really removed the rows, not just hid them.
		for _, table := range []string{"message", "working_memory"} {
			var n int64
			if err := s.r.Table(table).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s has %d rows after delete, want 0", table, n)
			}
		}
		// The events outlive the conversation.
		evs, err := s.Events(ctx, agent.EventQuery{ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 {
			t.Errorf("Events of deleted c1 = %d, want 2", len(evs))
		}
		if got, want := len(allEvents(t, s)), 5; got != want {
			t.Errorf("log has %d events, want %d", got, want)
		}

		temp := createdRec("t1", "")
		temp.Conversation.Temp = true
		wantCode(t, s.Append(ctx, temp), agent.CodeBadRequest)
		wantCode(t, s.Append(ctx, createdRec("c2", ""), createdRec("c2", "twice")), agent.CodeBadRequest)
		if _, err := s.Conversation(ctx, "c2"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("half of a failed append was stored: err = %v", err)
		}
		wantCode(t, s.Append(ctx, deletedRec("c1")), agent.CodeNotFound)
	})
}

func TestMessageEvent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		rec := &recorder{}
		s := open(t, dsn, Options{Now: clk.now, Publish: rec.publish})
		ctx := t.Context()
		mustAppend(t, s, createdRec("c1", ""))
		clk.advance(time.Minute)
		user := userRec("c1", "hi", "k1")
		mustAppend(t, s, textRec("c1", "noise"), user)

		m := user.Event.Event.Message
		if user.Event.Seq != 3 || m.Seq != 3 {
			t.Fatalf("event seq %d, message seq %d; want 3, 3", user.Event.Seq, m.Seq)
		}
		msgs, err := s.Messages(ctx, agent.MessageQuery{ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.Message{*m}, msgs); diff != "" {
			t.Errorf("Messages (-want +got):\n%s", diff)
		}
		byClient, err := s.MessageByClientID(ctx, "c1", "k1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*m, byClient); diff != "" {
			t.Errorf("MessageByClientID (-want +got):\n%s", diff)
		}
		if _, err := s.MessageByClientID(ctx, "c1", "other"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("MessageByClientID(other): err = %v, want not_found", err)
		}
		c, err := s.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if c.MessageCount != 1 || !c.UpdatedAt.Equal(clk.now()) {
			t.Errorf("conversation after message: count %d updated %v; want 1, %v", c.MessageCount, c.UpdatedAt, clk.now())
		}
		pub := rec.events()
		if got, want := seqs(pub), []int64{1, 2, 3}; !cmp.Equal(got, want) {
			t.Errorf("published seqs %v, want %v", got, want)
		}
		if pub[2].Event.Message.Seq != 3 {
			t.Errorf("published message seq %d, want 3", pub[2].Event.Message.Seq)
		}
		stored := allEvents(t, s)
		if got := stored[2].Event.Message; got.Seq != 3 || got.ID != m.ID {
			t.Errorf("stored message event: %+v", got)
		}
	})
}

func TestMessagesPaging(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("c1", ""), createdRec("c2", ""))
		var ids []string
		for i := range 6 {
			u := userRec("c1", fmt.Sprint(i), "")
			ids = append(ids, u.Event.Event.Message.ID)
			mustAppend(t, s, u, userRec("c2", "other", ""))
		}
		tests := []struct {
			name string
			q    agent.MessageQuery
			want []string
		}{
			{"all", agent.MessageQuery{}, ids},
			{"limit", agent.MessageQuery{Limit: 2}, ids[:2]},
			{"offset", agent.MessageQuery{Offset: 4}, ids[4:]},
			{"offset limit", agent.MessageQuery{Offset: 1, Limit: 2}, ids[1:3]},
			{"after", agent.MessageQuery{After: 7}, ids[3:]}, // c1's messages have seqs 3,5,7,9,11,13
			{"after past end", agent.MessageQuery{After: 100}, []string{}},
		}
		for _, tt := range tests {
			tt.q.ConversationID = "c1"
			msgs, err := s.Messages(t.Context(), tt.q)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			got := []string{}
			for _, m := range msgs {
				got = append(got, m.ID)
			}
			if !cmp.Equal(got, tt.want) {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		}
		if _, err := s.Messages(t.Context(), agent.MessageQuery{ConversationID: "nope"}); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("Messages(unknown): err = %v, want not_found", err)
		}
	})
}

func TestConversationsList(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		for _, id := range []string{"a", "b", "c", "d"} {
			mustAppend(t, s, createdRec(id, id))
			clk.advance(time.Second)
		}
		mustAppend(t, s, userRec("b", "bump", "")) // b becomes the most recent
		list, total, err := s.Conversations(t.Context(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range list {
			got = append(got, c.ID)
		}
		if want := []string{"b", "d", "c", "a"}; !cmp.Equal(got, want) || total != 4 {
			t.Errorf("Conversations = %v total %d, want %v total 4", got, total, want)
		}
		page, total, err := s.Conversations(t.Context(), 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 2 || page[0].ID != "d" || page[1].ID != "c" || total != 4 {
			t.Errorf("page(1,2) = %+v total %d", page, total)
		}
	})
}

// gate blocks the writer inside Publish until opened, so Appends can be
// queued to land in one batch.
type gate struct {
	armed   chan struct{} // closed when the writer is blocked in Publish
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{armed: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) publish([]agent.Encoded) {
	g.once.Do(func() {
		close(g.armed)
		<-g.release
	})
}

// queueAppends starts one Append per record set while the writer is held by
// g, waits until all are queued, and returns their results' channel.
func queueAppends(t *testing.T, s *Store, sets ...[]*agent.Record) []chan error {
	t.Helper()
	out := make([]chan error, len(sets))
	for i, recs := range sets {
		out[i] = make(chan error, 1)
		go func() { out[i] <- s.Append(context.WithoutCancel(t.Context()), recs...) }()
		// Queue them one by one, so the batch keeps this order.
		testwait.For(t, fmt.Sprintf("Append %d queued", i+1), func() bool { return s.wr.Queued() >= i+1 })
	}
	return out
}

func TestBadRequestFailsOnlyItself(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		g := newGate()
		s := open(t, dsn, Options{Publish: g.publish})
		ctx := t.Context()
		first := make(chan error, 1)
		go func() { first <- s.Append(ctx, createdRec("c1", ""), userRec("c1", "one", "k1")) }()
		<-g.armed
		good1 := []*agent.Record{textRec("c1", "a")}
		dup := []*agent.Record{textRec("c1", "dup text"), userRec("c1", "again", "k1")} // k1 reused
		gone := []*agent.Record{userRec("c-missing", "x", "")}                          // no such conversation
		good2 := []*agent.Record{userRec("c1", "two", "k2")}
		res := queueAppends(t, s, good1, dup, gone, good2)
		close(g.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-res[0]; err != nil {
			t.Errorf("good1: %v", err)
		}
		wantCode(t, <-res[1], agent.CodeBadRequest)
		wantCode(t, <-res[2], agent.CodeNotFound)
		if err := <-res[3]; err != nil {
			t.Errorf("good2: %v", err)
		}
		// One batch held all four and failed; each was then retried alone.
		if s.wr.Stats.Split != 1 || s.wr.Stats.Batches != 3 {
			t.Errorf("writer: %d split batches, %d committed; want 1, 3 (first, good1, good2)", s.wr.Stats.Split, s.wr.Stats.Batches)
		}
		if dup[0].Event.Seq != 0 || dup[1].Event.Seq != 0 {
			t.Errorf("failed records keep seqs %d, %d; want 0", dup[0].Event.Seq, dup[1].Event.Seq)
		}

		evs := allEvents(t, s)
		if got, want := seqs(evs), []int64{1, 2, 3, 4}; !cmp.Equal(got, want) {
			t.Errorf("seqs %v, want gapless %v", got, want)
		}
		for _, e := range evs {
			if e.ID == dup[0].Event.ID || e.ID == dup[1].Event.ID || e.ID == gone[0].Event.ID {
				t.Errorf("event %s of a failed append was stored", e.ID)
			}
		}
		msgs, err := s.Messages(ctx, agent.MessageQuery{ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[0].ClientID != "k1" || msgs[1].ClientID != "k2" || msgs[1].Seq != 4 {
			t.Errorf("messages: %+v", msgs)
		}
		c, err := s.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if c.MessageCount != 2 {
			t.Errorf("message_count %d, want 2", c.MessageCount)
		}
		// A lone failing append leaves the seq counter where it was.
		wantCode(t, s.Append(ctx, textRec("c1", "ok"), renamedRec("nope", "x")), agent.CodeNotFound)
		next := textRec("c1", "next")
		mustAppend(t, s, next)
		if next.Event.Seq != 5 {
			t.Errorf("seq after a failed append = %d, want 5", next.Event.Seq)
		}
	})
}

func TestIdempotentEventID(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		rec := &recorder{}
		s := open(t, dsn, Options{Publish: rec.publish})
		mustAppend(t, s, createdRec("c1", ""))
		u := userRec("c1", "hi", "")
		mustAppend(t, s, u)
		again := *u
		again.Event.Seq = 0
		again.Event.Event = &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
			Type: agent.MessageUser, ID: "msg-other", Content: []agent.Content{agent.Text("hi")},
		}}
		same := textRec("c1", "t")
		mustAppend(t, s, &again, same, &agent.Record{Event: same.Event})
		if again.Event.Seq != u.Event.Seq || again.Event.Event.Message.Seq != u.Event.Seq {
			t.Errorf("replayed event got seq %d (message %d), want the stored %d", again.Event.Seq, again.Event.Event.Message.Seq, u.Event.Seq)
		}
		if got, want := seqs(allEvents(t, s)), []int64{1, 2, 3}; !cmp.Equal(got, want) {
			t.Errorf("stored seqs %v, want %v", got, want)
		}
		if got, want := seqs(rec.events()), []int64{1, 2, 3}; !cmp.Equal(got, want) {
			t.Errorf("published seqs %v, want %v (a skipped event is not published again)", got, want)
		}
		msgs, err := s.Messages(t.Context(), agent.MessageQuery{ConversationID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || msgs[0].ID != u.Event.Event.Message.ID {
			t.Errorf("messages %+v, want only the first", msgs)
		}
	})
}

func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		rec := &recorder{}
		s := open(t, dsn, Options{Publish: rec.publish})
		mustAppend(t, s, createdRec("c1", ""))
		const workers, each = 16, 40
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		mine := make([][]*agent.Record, workers)
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					recs := []*agent.Record{textRec("c1", fmt.Sprint(w, i))}
					if i%3 == 0 {
						recs = append(recs, userRec("c1", "m", ""))
					}
					if err := s.Append(t.Context(), recs...); err != nil {
						errs <- err
						return
					}
					mine[w] = append(mine[w], recs...)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		pub := rec.events()
		for i, e := range pub {
			if e.Seq != int64(i+1) {
				t.Fatalf("published[%d].Seq = %d: not gapless and increasing", i, e.Seq)
			}
		}
		stored := allEvents(t, s)
		if len(stored) != len(pub) {
			t.Fatalf("stored %d events, published %d", len(stored), len(pub))
		}
		for i := range stored {
			if stored[i].ID != pub[i].ID || stored[i].Seq != pub[i].Seq {
				t.Fatalf("stored[%d] = %s/%d, published %s/%d", i, stored[i].ID, stored[i].Seq, pub[i].ID, pub[i].Seq)
			}
		}
		// Each caller's own records got increasing seqs, in its order.
		for w, recs := range mine {
			for i := 1; i < len(recs); i++ {
				if recs[i].Event.Seq <= recs[i-1].Event.Seq {
					t.Fatalf("worker %d: seq %d after %d", w, recs[i].Event.Seq, recs[i-1].Event.Seq)
				}
			}
		}
		if s.wr.Stats.Batches >= s.wr.Stats.Records {
			t.Logf("no group commit happened: %d batches for %d records", s.wr.Stats.Batches, s.wr.Stats.Records)
		}
	})
}

func TestEventsQuery(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("a", ""), createdRec("b", "")) // 1, 2
		for i := range 5 {                                         // a: 3,5,7,9,11  b: 4,6,8,10,12
			mustAppend(t, s, textRec("a", fmt.Sprint(i)), textRec("b", fmt.Sprint(i)))
		}
		mustAppend(t, s, renamedRec("a", "A")) // 13
		tests := []struct {
			name string
			q    agent.EventQuery
			want []int64
		}{
			{"all", agent.EventQuery{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
			{"after", agent.EventQuery{After: 10}, []int64{11, 12, 13}},
			{"limit", agent.EventQuery{After: 2, Limit: 3}, []int64{3, 4, 5}},
			{"conversation", agent.EventQuery{ConversationID: "a"}, []int64{3, 5, 7, 9, 11}}, // not a's agent events
			{"conversation after limit", agent.EventQuery{ConversationID: "b", After: 6, Limit: 2}, []int64{8, 10}},
			{"agent only", agent.EventQuery{AgentOnly: true}, []int64{1, 2, 13}},
			{"agent only after", agent.EventQuery{AgentOnly: true, After: 2}, []int64{13}},
			{"past head", agent.EventQuery{After: 13}, []int64{}},
		}
		for _, tt := range tests {
			evs, err := s.Events(t.Context(), tt.q)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got := seqs(evs); !cmp.Equal(got, tt.want) {
				t.Errorf("%s: seqs %v, want %v", tt.name, got, tt.want)
			}
		}
		// Paging through with After = last seq sees everything exactly once.
		var paged []int64
		for after := int64(0); ; {
			evs, err := s.Events(t.Context(), agent.EventQuery{After: after, Limit: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			paged = append(paged, seqs(evs)...)
			after = evs[len(evs)-1].Seq
		}
		if len(paged) != 13 || paged[12] != 13 {
			t.Errorf("paged %v", paged)
		}
		evs := allEvents(t, s)
		if evs[12].Agent == nil || evs[12].Agent.Title != "A" || evs[12].ConversationID != "a" {
			t.Errorf("renamed event decoded as %+v", evs[12])
		}
		if evs[3].Event == nil || evs[3].Event.Text != "0" || evs[3].ConversationID != "b" {
			t.Errorf("text event decoded as %+v", evs[3])
		}
		seq, err := s.EventSeq(t.Context(), evs[6].ID)
		if err != nil || seq != 7 {
			t.Errorf("EventSeq = %d, %v; want 7", seq, err)
		}
		if _, err := s.EventSeq(t.Context(), "nope"); !errors.Is(err, agent.ErrNotFound) {
			t.Errorf("EventSeq(unknown): err = %v, want not_found", err)
		}
	})
}

func TestPrune(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		ctx := t.Context()
		mustAppend(t, s, createdRec("c1", ""), userRec("c1", "old", "")) // 1, 2
		pruned, head, err := s.Bounds(ctx)
		if err != nil || pruned != 0 || head != 2 {
			t.Fatalf("Bounds = %d, %d, %v; want 0, 2", pruned, head, err)
		}
		clk.advance(time.Hour)
		cut := clk.now()
		mustAppend(t, s, textRec("c1", "new")) // 3
		clk.advance(time.Hour)
		mustAppend(t, s, textRec("c1", "newer")) // 4

		n, err := s.Prune(ctx, cut)
		if err != nil || n != 2 {
			t.Fatalf("Prune = %d, %v; want 2", n, err)
		}
		pruned, head, err = s.Bounds(ctx)
		if err != nil || pruned != 2 || head != 4 {
			t.Errorf("Bounds after prune = %d, %d, %v; want 2, 4", pruned, head, err)
		}
		if got := seqs(allEvents(t, s)); !cmp.Equal(got, []int64{3, 4}) {
			t.Errorf("events after prune %v, want [3 4]", got)
		}
		if n, err := s.Prune(ctx, cut); err != nil || n != 0 {
			t.Errorf("second Prune = %d, %v; want 0", n, err)
		}
		// Messages are kept.
		if msgs, err := s.Messages(ctx, agent.MessageQuery{ConversationID: "c1"}); err != nil || len(msgs) != 1 {
			t.Errorf("messages after prune: %d, %v", len(msgs), err)
		}
		// Pruning everything keeps head, and seqs continue above it.
		if n, err := s.Prune(ctx, clk.now().Add(time.Second)); err != nil || n != 2 {
			t.Fatalf("Prune all = %d, %v; want 2", n, err)
		}
		pruned, head, err = s.Bounds(ctx)
		if err != nil || pruned != 4 || head != 4 {
			t.Errorf("Bounds after pruning all = %d, %d, %v; want 4, 4", pruned, head, err)
		}
		next := textRec("c1", "after")
		mustAppend(t, s, next)
		if next.Event.Seq != 5 {
			t.Errorf("seq after pruning all = %d, want 5", next.Event.Seq)
		}
	})
}

func TestTurnState(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		ctx := t.Context()
		mustAppend(t, s, createdRec("c1", ""), createdRec("c2", ""))
		start := userRec("c1", "go", "")
		start.Turn = agent.TurnStart
		mustAppend(t, s, textRec("c2", "x"), start)
		c, err := s.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if !c.Running || c.TurnSeq != 4 || c.TurnSeq != start.Event.Seq {
			t.Errorf("after TurnStart: running %v turn_seq %d; want true %d", c.Running, c.TurnSeq, start.Event.Seq)
		}
		// This Store's own running turn is returned for its caller to
		// judge (only the runner knows whether it still runs).
		if running, err := s.OrphanedTurns(ctx); err != nil || len(running) != 1 || running[0].ID != "c1" {
			t.Errorf("OrphanedTurns with its own turn running = %+v, %v; want [c1]", running, err)
		}
		end := convRec("c1", &agent.Event{Type: agent.EventEnd})
		end.Turn = agent.TurnEnd
		mustAppend(t, s, end)
		c, err = s.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if c.Running || c.TurnSeq != 0 {
			t.Errorf("after TurnEnd: running %v turn_seq %d; want false 0", c.Running, c.TurnSeq)
		}
		if running, err := s.OrphanedTurns(ctx); err != nil || len(running) != 0 {
			t.Errorf("OrphanedTurns after end = %+v, %v", running, err)
		}
		bad := textRec("nope", "x")
		bad.Turn = agent.TurnStart
		wantCode(t, s.Append(ctx, bad), agent.CodeNotFound)
	})
}

func TestMemoryOrder(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := t.Context()
		mustAppend(t, s, createdRec("c1", ""), createdRec("c2", ""))
		if mem, err := s.Memory(ctx, "c1"); err != nil || len(mem) != 0 {
			t.Fatalf("empty Memory = %v, %v", mem, err)
		}
		sys := agent.ModelMessage{Role: agent.RoleSystem, Content: []agent.Content{agent.Text("be brief")}}
		user := agent.ModelMessage{Role: agent.RoleUser, Content: []agent.Content{agent.Text("hi")}}
		call := agent.ModelMessage{Role: agent.RoleAssistant, Reasoning: "think", ToolCalls: []agent.ToolCall{{ID: "t1", Name: "x__y", Arguments: `{"a":1}`}}}
		result := agent.ModelMessage{Role: agent.RoleTool, ToolCallID: "t1", Name: "x__y", Content: []agent.Content{agent.Text("42")}}
		r1 := userRec("c1", "hi", "")
		r1.Memory = []agent.ModelMessage{sys, user}
		r2 := textRec("c2", "other")
		r2.Memory = []agent.ModelMessage{user}
		r3 := convRec("c1", &agent.Event{Type: agent.EventToolCall, CallID: "t1", Name: "x__y", Arguments: `{"a":1}`})
		r3.Memory = []agent.ModelMessage{call}
		mustAppend(t, s, r1, r2)
		mustAppend(t, s, r3, &agent.Record{Event: textRec("c1", "r").Event, Memory: []agent.ModelMessage{result}})
		mem, err := s.Memory(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]agent.ModelMessage{sys, user, call, result}, mem); diff != "" {
			t.Errorf("Memory (-want +got):\n%s", diff)
		}
		bad := textRec("nope", "x")
		bad.Memory = []agent.ModelMessage{user}
		wantCode(t, s.Append(ctx, bad), agent.CodeNotFound)
	})
}

func TestUnknownTypesDecode(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("c1", ""))
		future := json.RawMessage(`{"type":"hologram","depth":3}`)
		mustAppend(t, s, convRec("c1", &agent.Event{Type: "hologram", Raw: future}))
		// Rows written by a newer version: an unknown kind and an unknown
		// agent event type.
		rows := []eventRow{
			{Seq: 3, ID: "ev-x1", CreatedAt: time.Now().UTC(), Type: "telepathy", Payload: `{"type":"telepathy","seq":3,"id":"ev-x1","date":"2026-01-01T00:00:00.000Z","mind":"x"}`},
			{Seq: 4, ID: "ev-x2", CreatedAt: time.Now().UTC(), Type: "agent", Payload: `{"type":"agent","seq":4,"id":"ev-x2","date":"2026-01-01T00:00:00.000Z","event":{"type":"archived","conversation_id":"c1"}}`},
		}
		if err := s.w.Create(&rows).Error; err != nil {
			t.Fatal(err)
		}
		s.durable.Store(4) // as a commit of the writer's would (deltalog.go)
		evs := allEvents(t, s)
		if len(evs) != 4 {
			t.Fatalf("got %d events, want 4", len(evs))
		}
		if e := evs[1].Event; e == nil || e.Type != "hologram" || string(e.Raw) != string(future) {
			t.Errorf("unknown event type decoded as %+v", evs[1].Event)
		}
		if evs[2].Kind != "telepathy" || evs[2].Seq != 3 || len(evs[2].Raw) == 0 {
			t.Errorf("unknown kind decoded as %+v", evs[2])
		}
		if a := evs[3].Agent; a == nil || a.Type != "archived" || len(a.Raw) == 0 || evs[3].ConversationID != "c1" {
			t.Errorf("unknown agent event decoded as %+v", evs[3])
		}
		b, err := json.Marshal(evs[1])
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) || !contains(string(b), `"depth":3`) {
			t.Errorf("re-encoded unknown event lost its fields: %s", b)
		}
	})
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

func TestAppendAfterCloseAndCancelled(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s, err := Open(t.Context(), dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Append(ctx, createdRec("c1", "")); !errors.Is(err, context.Canceled) {
			t.Errorf("Append with cancelled ctx: err = %v, want context.Canceled", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		wantCode(t, s.Append(t.Context(), createdRec("c1", "")), agent.CodeUnavailable)
	})
}

func TestCloseDrainsQueue(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		g := newGate()
		s, err := Open(t.Context(), dsn, Options{Publish: g.publish})
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() { first <- s.Append(t.Context(), createdRec("c1", "")) }()
		<-g.armed
		var sets [][]*agent.Record
		for i := range 10 {
			sets = append(sets, []*agent.Record{textRec("c1", fmt.Sprint(i))})
		}
		res := queueAppends(t, s, sets...)
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		close(g.release)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for i, c := range res {
			if err := <-c; err != nil {
				t.Errorf("queued append %d: %v", i, err)
			}
		}
		s2 := open(t, dsn, Options{})
		if got := len(allEvents(t, s2)); got != 11 {
			t.Errorf("after Close and reopen: %d events, want 11", got)
		}
	})
}

func TestReopenSQLite(t *testing.T) {
	t.Parallel()
	dsn := backends(t)[0].dsn(t)
	s, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, createdRec("c1", "kept"), userRec("c1", "hi", "k"))
	epoch := s.Epoch()
	if len(epoch) != 32 {
		t.Errorf("epoch %q", epoch)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dsn, Options{})
	if s.Epoch() != epoch {
		t.Errorf("epoch after reopen %q, want %q", s.Epoch(), epoch)
	}
	c, err := s.Conversation(t.Context(), "c1")
	if err != nil || c.Title != "kept" || c.MessageCount != 1 {
		t.Errorf("conversation after reopen: %+v, %v", c, err)
	}
	next := textRec("c1", "x")
	mustAppend(t, s, next)
	if next.Event.Seq != 3 {
		t.Errorf("seq after reopen = %d, want 3", next.Event.Seq)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	other := open(t, backends(t)[0].dsn(t), Options{})
	if other.Epoch() == epoch {
		t.Error("two databases share an epoch")
	}
}

func TestSQLiteDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dsn, path, extra string
		bad              bool
	}{
		{dsn: "sqlite:./agentik.db", path: "./agentik.db"},
		{dsn: "/var/lib/a.db", path: "/var/lib/a.db"},
		{dsn: "sqlite:a.db?_pragma=cache_size(-2000)", path: "a.db", extra: "&_pragma=cache_size(-2000)"},
		{dsn: "sqlite::memory:", bad: true},
		{dsn: "sqlite:", bad: true},
		{dsn: "sqlite:a.db?_time_format=sqlite", bad: true},
	}
	for _, tt := range tests {
		path, extra, err := sqlitePath(tt.dsn)
		if (err != nil) != tt.bad || path != tt.path || extra != tt.extra {
			t.Errorf("sqlitePath(%q) = %q, %q, %v; want %q, %q, bad %v", tt.dsn, path, extra, err, tt.path, tt.extra, tt.bad)
		}
	}
}

func TestSQLiteOddPaths(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("a#b %41 c", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{"sqlite:rel.db", "a#b %41 c/x.db"} {
		s := open(t, dsn, Options{})
		mustAppend(t, s, createdRec("c1", ""))
		path, _, _ := sqlitePath(dsn)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: database file not where asked: %v", dsn, err)
		}
	}
}

func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	s := open(t, backends(t)[0].dsn(t), Options{})
	for _, db := range []struct {
		name string
		s    *Store
	}{{"writer", s}} {
		var mode string
		var fk, sync, busy int
		w := db.s.w
		w.Raw("PRAGMA journal_mode").Scan(&mode)
		w.Raw("PRAGMA foreign_keys").Scan(&fk)
		w.Raw("PRAGMA synchronous").Scan(&sync)
		w.Raw("PRAGMA busy_timeout").Scan(&busy)
		if mode != "wal" || fk != 1 || sync != 1 || busy != 5000 {
			t.Errorf("%s: journal_mode %q foreign_keys %d synchronous %d busy_timeout %d", db.name, mode, fk, sync, busy)
		}
	}
	if err := s.r.Exec("DELETE FROM meta").Error; err == nil {
		t.Error("the read pool accepted a write")
	}
}

// TestOrphanedTurns: a turn whose process is gone is claimed once by the
// next Store; a turn of a live Store is left alone.
func TestOrphanedTurns(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		quiet := Options{Publish: func([]agent.Encoded) {}}
		a, err := Open(ctx, dsn, quiet)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, a, createdRec("c1", ""))
		start := userRec("c1", "go", "")
		start.Turn = agent.TurnStart
		mustAppend(t, a, start)

		var b *Store
		if strings.HasPrefix(dsn, "postgres") {
			b = open(t, dsn, quiet)
			// A is alive: its turn is not orphaned.
			if got, err := b.OrphanedTurns(ctx); err != nil || len(got) != 0 {
				t.Fatalf("turn of a live instance reported orphaned: %+v, %v", got, err)
			}
		}
		if err := a.Close(); err != nil { // A's process is gone
			t.Fatal(err)
		}
		if b == nil { // SQLite: one process at a time owns the file
			b = open(t, dsn, quiet)
		}
		// Two live Stores claim at once (on SQLite one process owns the
		// file, so only PostgreSQL has a second claimant).
		claimants := []*Store{b}
		if strings.HasPrefix(dsn, "postgres") {
			claimants = append(claimants, open(t, dsn, quiet))
		}
		var wg sync.WaitGroup
		got := make([][]agent.Conversation, len(claimants))
		for i, s := range claimants {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if got[i], err = s.OrphanedTurns(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var all []agent.Conversation
		for _, g := range got {
			all = append(all, g...)
		}
		if len(all) != 1 {
			t.Fatalf("orphaned turn claimed %d times: %+v", len(all), got)
		}
		claimed := all[0]
		if claimed.ID != "c1" || !claimed.Running {
			t.Fatalf("claimed %+v", claimed)
		}
		// The claimed turn now belongs to its claimant: another instance no
		// longer sees it as orphaned (on SQLite there is no other instance).
		if strings.HasPrefix(dsn, "postgres") {
			other := claimants[1] // the one that did not win the claim
			if len(got[1]) == 1 {
				other = claimants[0]
			}
			if again, err := other.OrphanedTurns(ctx); err != nil || len(again) != 0 {
				t.Fatalf("a turn claimed by a live instance reported again: %+v, %v", again, err)
			}
		}
	})
}

// The writer's own INSERTs (eventlog/commit.go) store each event's row as
// published: its payload byte for byte (quotes, backslashes, control
// characters, any script), NULL for an event of no conversation, the
// commit's date and its conversation's owner; one Append of more rows than one SQLite
// statement carries is several statements of one transaction.
func TestEventRowsAsPublished(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		var (
			mu  sync.Mutex
			pub = map[int64]agent.Encoded{}
		)
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now, Publish: func(evs []agent.Encoded) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range evs {
				pub[e.Seq] = e
			}
		}})
		mustAppend(t, s, createdRec("c1", `a "title"`))
		texts := []string{`"quoted"`, `back\slash`, "line\nbreak\ttab\x01", "ünïcödé ✓ 日本 🙂", `\u0000 as text`, "</script>&<"}
		var recs []*agent.Record
		for i := range eventlog.SQLiteInsertChunk*2 + 5 {
			recs = append(recs, textRec("c1", texts[i%len(texts)]))
		}
		recs = append(recs, &agent.Record{Event: agent.AllEvent{Kind: "telepathy", ID: "ev-" + newID(), Raw: json.RawMessage(`{"type":"telepathy","mind":"x"}`)}})
		mustAppend(t, s, recs...)

		rows, err := s.r.Raw("SELECT seq, id, conversation_id, created_at, type, payload, owner FROM agent_event ORDER BY seq").Rows()
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var (
				r   eventRow
				cid sql.NullString
			)
			if err := rows.Scan(&r.Seq, &r.ID, &cid, &r.CreatedAt, &r.Type, &r.Payload, &r.Owner); err != nil {
				t.Fatal(err)
			}
			n++
			mu.Lock()
			e, ok := pub[r.Seq]
			mu.Unlock()
			if !ok {
				t.Fatalf("row %d was not published", r.Seq)
			}
			owner := agent.LocalUser // the conversation's; an event of none has none
			if e.ConversationID == "" {
				owner = ""
			}
			if r.Payload != string(e.JSON) || r.ID != e.ID || r.Type != e.Kind || r.Owner != owner || e.Owner != owner {
				t.Errorf("row %d = %s %s %s %q, published %s %s %q", r.Seq, r.ID, r.Type, r.Owner, r.Payload, e.ID, e.Kind, e.JSON)
			}
			if cid.Valid != (e.ConversationID != "") || cid.String != e.ConversationID {
				t.Errorf("row %d: conversation_id %v, published %q", r.Seq, cid, e.ConversationID)
			}
			if !r.CreatedAt.Equal(clk.now()) {
				t.Errorf("row %d: created_at %v, want %v", r.Seq, r.CreatedAt, clk.now())
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want := 1 + len(recs); n != want {
			t.Errorf("%d rows, want %d", n, want)
		}
	})
}

// TestPrunePrefix: Prune deletes a prefix of the log, never a hole. After
// the clock stepped back, the old event behind a newer one stays until the
// newer one goes, and pruned_through names the last deleted seq.
func TestPrunePrefix(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		ctx := t.Context()
		t0 := clk.now()
		mustAppend(t, s, createdRec("c1", "")) // 1 at t0
		clk.advance(2 * time.Hour)
		mustAppend(t, s, textRec("c1", "later")) // 2 at t0+2h
		clk.advance(-2 * time.Hour)
		mustAppend(t, s, textRec("c1", "stepped back")) // 3 at t0

		n, err := s.Prune(ctx, t0.Add(time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("Prune = %d, %v; want 1", n, err)
		}
		if got := seqs(allEvents(t, s)); !cmp.Equal(got, []int64{2, 3}) {
			t.Errorf("events after prune %v, want [2 3]", got)
		}
		if pruned, head, err := s.Bounds(ctx); err != nil || pruned != 1 || head != 3 {
			t.Errorf("Bounds after prune = %d, %d, %v; want 1, 3", pruned, head, err)
		}
	})
}

// TestCursorAt: the cursor before the first event dated at or after t,
// found by bisecting seqs (created_at has no index), over a pruned prefix
// and a hole in the seqs, checked against a linear reading of the log.
func TestCursorAt(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		clk := newClock()
		s := open(t, dsn, Options{Now: clk.now})
		ctx := t.Context()
		t0 := clk.now()
		mustAppend(t, s, createdRec("c1", ""))
		for i := range 40 {
			clk.advance(time.Minute)
			if i%7 == 3 {
				continue // two events a minute apart here and there
			}
			mustAppend(t, s, textRec("c1", "x"))
		}
		if _, err := s.Prune(ctx, t0.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.w.Exec("DELETE FROM agent_event WHERE seq IN (20, 21)").Error; err != nil {
			t.Fatal(err) // a hole: seqs of a rolled-back PostgreSQL append
		}
		evs := allEvents(t, s)
		pruned, head, err := s.Bounds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for m := -1; m <= 42; m++ {
			at := t0.Add(time.Duration(m)*time.Minute + 30*time.Second)
			want := head
			for _, ev := range evs {
				if !ev.Date.Before(at) {
					want = ev.Seq - 1
					break
				}
			}
			got, err := s.CursorAt(ctx, at)
			if err != nil || got != want {
				t.Errorf("CursorAt(t0%+dm30s) = %d, %v; want %d (pruned %d, head %d)", m, got, err, want, pruned, head)
			}
		}
	})
}

// TestCreatedAtIndexDropped: a database made while agent_event.created_at
// had its index loses it on open (every token's row paid for it).
func TestCreatedAtIndexDropped(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s, err := Open(t.Context(), dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		count := func(s *Store) int {
			t.Helper()
			q := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
			if s.postgres {
				q = "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?"
			}
			var n int
			if err := s.r.Raw(q, droppedEventIndex).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if err := s.w.Exec("CREATE INDEX " + droppedEventIndex + " ON agent_event (created_at)").Error; err != nil {
			t.Fatal(err)
		}
		if n := count(s); n != 1 {
			t.Fatalf("%d indexes named %s before reopening, want 1", n, droppedEventIndex)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, dsn, Options{})
		if n := count(s); n != 0 {
			t.Errorf("%d indexes named %s after reopening, want 0", n, droppedEventIndex)
		}
	})
}
