package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/agent/agenttest"
)

type recorder struct {
	mu  sync.Mutex
	evs []agent.AllEvent
}

func (r *recorder) Publish(evs ...agent.AllEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
}

func (r *recorder) events() []agent.AllEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.AllEvent(nil), r.evs...)
}

func TestMemStoreContract(t *testing.T) {
	pub := &recorder{}
	agenttest.StoreContract(t, agent.NewMemStore(agent.TempConfig{}, pub, nil), pub.events)
}

func createTemp(t *testing.T, st *agent.MemStore, date time.Time, text string) (string, error) {
	t.Helper()
	cid := agent.NewID()
	c := agent.Conversation{ID: cid, Temp: true, CreatedAt: date, UpdatedAt: date}
	return cid, st.Append(context.Background(), &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: date, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid}},
		Conversation: &c,
		Memory:       []agent.ModelMessage{{Role: agent.RoleSystem, Content: []agent.Content{agent.Text(text)}}},
	})
}

// TestMemStoreBounds checks the count and byte caps of temp conversations:
// past either, a write is refused with unavailable and changes nothing.
func TestMemStoreBounds(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st := agent.NewMemStore(agent.TempConfig{MaxCount: 2, MaxBytes: 100}, nil, nil)
	for range 2 {
		if _, err := createTemp(t, st, now, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := createTemp(t, st, now, "x"); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Fatalf("third temp conversation: %v, want unavailable", err)
	}
	if _, n, _ := st.Conversations(ctx, 0, 10); n != 2 {
		t.Fatalf("%d temp conversations, want 2", n)
	}

	st = agent.NewMemStore(agent.TempConfig{MaxBytes: 100}, nil, nil)
	if _, err := createTemp(t, st, now, string(make([]byte, 60))); err != nil {
		t.Fatal(err)
	}
	if _, err := createTemp(t, st, now, string(make([]byte, 60))); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Fatalf("past the byte cap: %v, want unavailable", err)
	}
}

// TestMemStoreSweep checks that Sweep drops only idle, not running temp
// conversations, and says so to subscribers.
func TestMemStoreSweep(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	pub := &recorder{}
	st := agent.NewMemStore(agent.TempConfig{Idle: time.Minute}, pub, func() time.Time { return now })
	idle, _ := createTemp(t, st, start, "x")
	fresh, _ := createTemp(t, st, start.Add(time.Minute), "x")
	now = start.Add(90 * time.Second)
	if err := st.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Has(idle) || !st.Has(fresh) {
		t.Fatalf("after sweep: idle kept %v, fresh kept %v", st.Has(idle), st.Has(fresh))
	}
	evs := pub.events()
	if last := evs[len(evs)-1]; last.EventType() != agent.AgentDeleted || last.ConversationID != idle {
		t.Fatalf("last event %s of %s, want deleted of the idle one", last.EventType(), last.ConversationID)
	}
}

// chanPublisher hands every published event to a channel.
type chanPublisher chan agent.AllEvent

func (c chanPublisher) Publish(evs ...agent.AllEvent) {
	for _, ev := range evs {
		c <- ev
	}
}

// TestMemStoreSweepsOnTimer checks that SweepEvery drops idle temp
// conversations by itself, with no request to trigger it.
func TestMemStoreSweepsOnTimer(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pub := make(chanPublisher, 16)
	st := agent.NewMemStore(agent.TempConfig{Idle: time.Minute}, pub, func() time.Time { return start.Add(time.Hour) })
	id, err := createTemp(t, st, start, "x")
	if err != nil {
		t.Fatal(err)
	}
	<-pub // created
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); st.SweepEvery(ctx, time.Millisecond) }()
	ev := <-pub
	cancel()
	<-done
	if ev.EventType() != agent.AgentDeleted || ev.ConversationID != id || st.Has(id) {
		t.Fatalf("got %s of %s, has %v; want the idle one deleted", ev.EventType(), ev.ConversationID, st.Has(id))
	}
}

// TestMemStoreVersion: Version moves with every applied Append (a sweep's
// deletes included), not with a refused one or a read.
func TestMemStoreVersion(t *testing.T) {
	now := time.Now()
	st := agent.NewMemStore(agent.TempConfig{MaxCount: 1, Idle: time.Minute}, nil, func() time.Time { return now })
	v := st.Version()
	if _, err := createTemp(t, st, now, "x"); err != nil {
		t.Fatal(err)
	}
	if st.Version() <= v {
		t.Fatal("Version did not move with a create")
	}
	v = st.Version()
	if _, err := createTemp(t, st, now, "y"); err == nil {
		t.Fatal("a second temp conversation past MaxCount 1 was accepted")
	}
	if _, _, err := st.Conversations(context.Background(), 0, 10); err != nil {
		t.Fatal(err)
	}
	if st.Version() != v {
		t.Fatal("Version moved with a refused Append or a read")
	}
	now = now.Add(2 * time.Minute)
	if err := st.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.Version() <= v {
		t.Fatal("Version did not move with a sweep's delete")
	}
}
