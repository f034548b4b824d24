package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/store"
)

func TestMain(m *testing.M) {
	// gorm's prepared-statement cache starts a goroutine it never stops.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"))
}

// rig is a broker fed by a real store on a SQLite file.
func rig(t *testing.T) (*store.Store, *broker.Broker) {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(st, nil)
	if err := st.Start(context.Background(), b.PublishEncoded, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, b
}

func created(id string) *agent.Record {
	return &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: time.Now(), ConversationID: id, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: id}},
		Conversation: &agent.Conversation{ID: id, CreatedAt: time.Now(), UpdatedAt: time.Now()},
	}
}

func text(conv, s string) *agent.Record {
	return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: conv, Event: &agent.Event{Type: agent.EventAppendText, Text: s}}}
}

// TestResumeSeamIsGapless subscribes from 0 while events are being
// appended at full speed: every seq arrives exactly once, in order, with its
// JSON.
func TestResumeSeamIsGapless(t *testing.T) {
	st, b := rig(t)
	// The deadline only guards against a hang: 3000 appends one by one
	// take seconds on a loaded 2-core machine under -race, and the test is
	// about order, not speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := st.Append(ctx, created("c")); err != nil {
		t.Fatal(err)
	}
	const total = 3000
	var wg sync.WaitGroup
	wg.Add(1)
	grown := make(chan struct{}) // closed once the log holds some appends
	grew := sync.OnceFunc(func() { close(grown) })
	go func() {
		defer grew()
		defer wg.Done()
		for i := range total {
			if err := st.Append(ctx, text("c", fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
			if i == 50 {
				grew()
			}
		}
	}()
	defer wg.Wait()
	<-grown // let the log grow a little first
	for _, stream := range []broker.Stream{{Kind: broker.StreamAll}, {Kind: broker.StreamConversation, ConversationID: "c"}} {
		sub, err := b.Subscribe(ctx, stream, 0, st.Epoch())
		if err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if stream.Kind == broker.StreamConversation {
			want = 2 // the created event is an agent event
		}
		caughtUp := false
		for want <= total+1 {
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("%s: after seq %d: %v", stream.Kind, want-1, err)
			}
			if it.CaughtUp {
				caughtUp = true
				continue
			}
			if it.Event.Seq != want {
				t.Fatalf("%s: got seq %d, want %d (caught up: %v)", stream.Kind, it.Event.Seq, want, caughtUp)
			}
			var ev agent.AllEvent
			if err := json.Unmarshal(it.Event.JSON, &ev); err != nil || ev.Seq != want || ev.EventType() != it.Event.Type {
				t.Fatalf("item JSON %s decodes to %+v (type %q), %v", it.Event.JSON, ev, it.Event.Type, err)
			}
			j, _ := json.Marshal(ev)
			if string(j) != string(it.Event.JSON) {
				t.Fatalf("item JSON %s, event encodes to %s", it.Event.JSON, j)
			}
			want++
		}
		sub.Close()
	}
}

// TestSlowConsumerResubscribesLosslessly: a subscriber that stops reading
// is dropped with its cursor, and resubscribing from it loses nothing.
func TestSlowConsumerResubscribesLosslessly(t *testing.T) {
	st, b := rig(t)
	ctx := context.Background()
	if err := st.Append(ctx, created("c")); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	const total = broker.QueueLimit + 100
	var last int64
	for i := range total {
		if err := st.Append(ctx, text("c", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		if i < 10 { // read a few, then stall
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			last = it.Event.Seq
		}
	}
	for {
		it, err := sub.Next(ctx)
		var re *broker.ResyncError
		if errors.As(err, &re) {
			if re.Reason != broker.ReasonSlowConsumer || re.After != last {
				t.Fatalf("resync %+v, want slow_consumer after %d", re, last)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = it.Event.Seq
	}
	if b.Subscribers() != 0 {
		t.Errorf("%d subscribers left after the drop", b.Subscribers())
	}
	again, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, last, "")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	next := last + 1
	for next <= total+1 {
		it, err := again.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if it.CaughtUp {
			continue
		}
		if it.Event.Seq != next {
			t.Fatalf("after resubscribing: seq %d, want %d", it.Event.Seq, next)
		}
		next++
	}
}

func TestSubscribeRefusesBadCursors(t *testing.T) {
	st, b := rig(t)
	ctx := context.Background()
	if err := st.Append(ctx, created("c"), text("c", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Prune(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		after  int64
		epoch  string
		reason string
		code   string
		stream broker.Stream
	}{
		{"other database", 0, "another-epoch", broker.ReasonEpochMismatch, "", broker.Stream{Kind: broker.StreamAll}},
		{"pruned", 1, "", broker.ReasonPruned, "", broker.Stream{Kind: broker.StreamAll}},
		{"ahead", 99, "", broker.ReasonCursorAhead, "", broker.Stream{Kind: broker.StreamAll}},
		{"unknown stream", 0, "", "", agent.CodeBadRequest, broker.Stream{Kind: "everything"}},
		{"conversation without id", 0, "", "", agent.CodeBadRequest, broker.Stream{Kind: broker.StreamConversation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Subscribe(ctx, tt.stream, tt.after, tt.epoch)
			var re *broker.ResyncError
			switch {
			case tt.reason != "":
				if !errors.As(err, &re) || re.Reason != tt.reason {
					t.Fatalf("got %v, want resync %s", err, tt.reason)
				}
			default:
				if agent.ErrorCode(err) != tt.code {
					t.Fatalf("got %v, want %s", err, tt.code)
				}
			}
		})
	}
	if b.Subscribers() != 0 {
		t.Errorf("refused subscriptions left %d subscribers", b.Subscribers())
	}
}

func TestStreamsFilter(t *testing.T) {
	st, b := rig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	agentSub, _ := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAgent}, -1, "")
	convSub, _ := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: "c1"}, -1, "")
	defer agentSub.Close()
	defer convSub.Close()
	if err := st.Append(ctx, created("c1"), created("c2"), text("c2", "no"), text("c1", "yes")); err != nil {
		t.Fatal(err)
	}
	a1, _ := agentSub.Next(ctx)
	a2, _ := agentSub.Next(ctx)
	if a1.Event.Kind != agent.KindAgent || a2.Event.Kind != agent.KindAgent || a2.Event.ConversationID != "c2" {
		t.Fatalf("agent stream: %+v %+v", a1.Event, a2.Event)
	}
	c, _ := convSub.Next(ctx)
	if c.Event.Type != agent.EventAppendText || !strings.Contains(string(c.Event.Inner()), `"text":"yes"`) {
		t.Fatalf("conversation stream: %+v", c.Event)
	}
}

// Drops counts subscriptions ended or refused with a resync, by reason.
func TestDropsByReason(t *testing.T) {
	_, b := rig(t)
	ctx := context.Background()
	slow, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	for i := range broker.QueueLimit + 1 {
		b.Publish(agent.AllEvent{Kind: agent.KindAgent, Seq: int64(i + 1), ID: agent.NewID(), Agent: &agent.AgentEvent{Type: agent.AgentRenamed}})
	}
	if _, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, 999, ""); err == nil {
		t.Fatal("a cursor ahead of the head was accepted")
	}
	if _, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, 0, "not-the-epoch"); err == nil {
		t.Fatal("a foreign epoch was accepted")
	}
	got := b.Drops()
	want := map[string]int64{broker.ReasonSlowConsumer: 1, broker.ReasonCursorAhead: 1, broker.ReasonEpochMismatch: 1}
	if len(got) != len(want) {
		t.Errorf("drops %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("drops[%s] = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// TestLongReplayFromTheDatabaseIsGapless: a replay longer than the recent
// ring reads the database page by page, each page read while the previous
// one is delivered, while events keep being appended: every seq arrives
// exactly once, in order, and the subscription catches up.
func TestLongReplayFromTheDatabaseIsGapless(t *testing.T) {
	st, b := rig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := st.Append(ctx, created("c")); err != nil {
		t.Fatal(err)
	}
	const stored, live = broker.RecentLimit + 2500, 1500
	for i := 0; i < stored; {
		var recs []*agent.Record
		for ; i < stored && len(recs) < 500; i++ {
			recs = append(recs, text("c", fmt.Sprint(i)))
		}
		if err := st.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: "c"}, 0, st.Epoch())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range live {
			if err := st.Append(ctx, text("c", fmt.Sprint("live", i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer wg.Wait()
	want, caughtUp := int64(2), false // seq 1 is the created (agent) event
	for want <= stored+live+1 {
		it, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after seq %d: %v", want-1, err)
		}
		if it.CaughtUp {
			caughtUp = true
			continue
		}
		if it.Event.Seq != want {
			t.Fatalf("got seq %d, want %d (caught up: %v)", it.Event.Seq, want, caughtUp)
		}
		want++
	}
	wg.Wait()
	if !caughtUp {
		// The appender may have finished first: then caught_up follows.
		it, err := sub.Next(ctx)
		if err != nil || !it.CaughtUp {
			t.Fatalf("after every event: %+v, %v; want caught_up", it, err)
		}
	}
}

// TestAllStreamsByOwner: the all and agent streams are indexed by their
// owner, so each member's gets their own conversations' events and
// everyone's (a tool server's), an admin's gets every event, and none
// gets another member's.
func TestAllStreamsByOwner(t *testing.T) {
	st, b := rig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	as := func(id, role string) context.Context {
		return agent.WithPrincipal(ctx, agent.Principal{UserID: id, Role: role})
	}
	ann, _ := b.Subscribe(as("ann", agent.RoleMember), broker.Stream{Kind: broker.StreamAll}, -1, "")
	bob, _ := b.Subscribe(as("bob", agent.RoleMember), broker.Stream{Kind: broker.StreamAgent}, -1, "")
	admin, _ := b.Subscribe(as("root", agent.RoleAdmin), broker.Stream{Kind: broker.StreamAll}, -1, "")
	for _, s := range []*broker.Sub{ann, bob, admin} {
		defer s.Close()
	}
	if n := b.Subscribers(); n != 3 {
		t.Fatalf("Subscribers() = %d, want 3", n)
	}
	owned := func(id, owner string) *agent.Record {
		r := created(id)
		r.Conversation.Owner = owner
		return r
	}
	if err := st.Append(ctx, owned("a1", "ann"), owned("b1", "bob"), text("b1", "bob's"), text("a1", "ann's")); err != nil {
		t.Fatal(err)
	}
	b.Publish(agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: time.Now(), Agent: &agent.AgentEvent{Type: agent.AgentToolServer}})
	next := func(s *broker.Sub) string {
		t.Helper()
		it, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return it.Event.ConversationID + "/" + it.Event.Type
	}
	got := func(s *broker.Sub, n int) []string {
		var out []string
		for range n {
			out = append(out, next(s))
		}
		return out
	}
	if g, want := fmt.Sprint(got(ann, 3)), "[a1/created a1/append_text /tool_server]"; g != want {
		t.Errorf("ann's all stream: %s, want %s", g, want)
	}
	if g, want := fmt.Sprint(got(bob, 2)), "[b1/created /tool_server]"; g != want {
		t.Errorf("bob's agent stream: %s, want %s", g, want)
	}
	if g, want := fmt.Sprint(got(admin, 5)), "[a1/created b1/created b1/append_text a1/append_text /tool_server]"; g != want {
		t.Errorf("the admin's all stream: %s, want %s", g, want)
	}
	ann.Close()
	if n := b.Subscribers(); n != 2 {
		t.Errorf("Subscribers() after a Close = %d, want 2", n)
	}
}
