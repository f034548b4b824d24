package store

import (
	"context"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/agent/agenttest"
)

// openTemp opens a temp database for a test, closed when it ends.
func openTemp(t *testing.T, opt TempOptions) *Store {
	t.Helper()
	st, err := OpenTemp(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

// TestTempStoreContract runs on a temp database the contract every
// agent.Store keeps, and the queue's and approvals'.
func TestTempStoreContract(t *testing.T) {
	t.Parallel()
	t.Run("store", func(t *testing.T) {
		rec := &recorder{}
		agenttest.StoreContract(t, openTemp(t, TempOptions{Publish: rec.publish}), rec.events)
	})
	t.Run("queue", func(t *testing.T) { agenttest.QueueContract(t, openTemp(t, TempOptions{})) })
	t.Run("approval", func(t *testing.T) { agenttest.ApprovalContract(t, openTemp(t, TempOptions{})) })
}

func createTemp(t *testing.T, st *Store, date time.Time, text string) (string, error) {
	t.Helper()
	cid := agent.NewID()
	c := agent.Conversation{ID: cid, Temp: true, CreatedAt: date, UpdatedAt: date}
	return cid, st.Append(context.Background(), &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: date, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid}},
		Conversation: &c,
		Memory:       []agent.ModelMessage{{Role: agent.RoleSystem, Content: []agent.Content{agent.Text(text)}}},
	})
}

// TestTempEvents: a temp database logs nothing and publishes with seq 0;
// its messages say seq 0, a Quiet record is applied and not published, and
// what it reads back is temp (with its APIRequest).
func TestTempEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &recorder{}
	var owners []string
	st := openTemp(t, TempOptions{Publish: func(evs []agent.Encoded) {
		for _, e := range evs {
			owners = append(owners, e.Owner)
		}
		rec.publish(evs)
	}})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cid := agent.NewID()
	c := agent.Conversation{ID: cid, Temp: true, APIRequest: true, CreatedAt: now, UpdatedAt: now}
	msg := func(text string, quiet bool) *agent.Record {
		m := agent.Message{Type: agent.MessageUser, ID: agent.NewID(), ConversationID: cid, Date: now, Content: []agent.Content{agent.Text(text)}}
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: now, ConversationID: cid,
			Event: &agent.Event{Type: agent.EventMessage, Message: &m}}, Quiet: quiet}
	}
	if err := st.Append(ctx, &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid}},
		Conversation: &c,
	}, msg("seeded", true), msg("asked", false)); err != nil {
		t.Fatal(err)
	}
	if !c.Temp || !c.APIRequest {
		t.Errorf("created %+v, want temp and api_request", c)
	}
	evs := rec.events()
	if len(evs) != 2 || evs[0].EventType() != agent.AgentCreated || evs[1].Event.Message.Content[0].Body != "asked" {
		t.Fatalf("published %d events %+v, want created and the unquiet message", len(evs), evs)
	}
	for i, ev := range evs {
		if ev.Seq != 0 || owners[i] != agent.LocalUser {
			t.Errorf("published seq %d owner %q, want 0 and %q", ev.Seq, owners[i], agent.LocalUser)
		}
	}
	ms, err := st.Messages(ctx, agent.MessageQuery{ConversationID: cid})
	if err != nil || len(ms) != 2 || ms[0].Content[0].Body != "seeded" || ms[1].Seq != 0 || ms[1].ParentID != ms[0].ID {
		t.Fatalf("messages %+v, %v: want both in order, seq 0, the second after the first", ms, err)
	}
	got, err := st.Conversation(ctx, cid)
	if err != nil || !got.Temp || !got.APIRequest || got.MessageCount != 2 {
		t.Fatalf("conversation %+v, %v", got, err)
	}
	list, n, err := st.Conversations(ctx, 0, 10)
	if err != nil || n != 1 || !list[0].Temp || !list[0].APIRequest {
		t.Fatalf("list %+v %d, %v", list, n, err)
	}
	var rows int
	if err := st.readRow(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('agent_event', 'search_doc')").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d event or search tables, %v: a temp database has none", rows, err)
	}
	if err := st.readRow(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'conversation' AND name LIKE 'idx_conversation_%' AND name != 'idx_conversation_source'").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d conversation list indexes, %v: a temp database has none", rows, err)
	}
}

// TestTempBounds checks the count and byte caps of temp conversations:
// past either, a write is refused with unavailable and changes nothing.
func TestTempBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	st := openTemp(t, TempOptions{Config: agent.TempConfig{MaxCount: 2, MaxBytes: 100}})
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

	st = openTemp(t, TempOptions{Config: agent.TempConfig{MaxBytes: 100}})
	if _, err := createTemp(t, st, now, string(make([]byte, 60))); err != nil {
		t.Fatal(err)
	}
	if _, err := createTemp(t, st, now, string(make([]byte, 60))); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Fatalf("past the byte cap: %v, want unavailable", err)
	}
	// A refused commit keeps nothing: a write that fails in the
	// transaction (a duplicate id) leaves the bytes where they were.
	id, err := createTemp(t, st, now, string(make([]byte, 10)))
	if err != nil {
		t.Fatal(err)
	}
	c := agent.Conversation{ID: id, Temp: true}
	dup := &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), ConversationID: id, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: id}},
		Conversation: &c, Memory: []agent.ModelMessage{{Role: agent.RoleSystem, Content: []agent.Content{agent.Text(string(make([]byte, 25)))}}}}
	if err := st.Append(ctx, dup); err == nil {
		t.Fatal("a duplicate conversation was accepted")
	}
	if _, err := createTemp(t, st, now, string(make([]byte, 25))); err != nil {
		t.Fatalf("after a failed commit: %v (its bytes were kept)", err)
	}
}

// TestTempSweep checks that Sweep drops only idle, not running temp
// conversations, and says so to subscribers.
func TestTempSweep(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	rec := &recorder{}
	st := openTemp(t, TempOptions{Config: agent.TempConfig{Idle: time.Minute}, Publish: rec.publish, Now: func() time.Time { return now }})
	idle, _ := createTemp(t, st, start, "x")
	fresh, _ := createTemp(t, st, start.Add(time.Minute), "x")
	now = start.Add(90 * time.Second)
	if err := st.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Has(idle) || !st.Has(fresh) {
		t.Fatalf("after sweep: idle kept %v, fresh kept %v", st.Has(idle), st.Has(fresh))
	}
	evs := rec.events()
	if last := evs[len(evs)-1]; last.EventType() != agent.AgentDeleted || last.ConversationID != idle {
		t.Fatalf("last event %s of %s, want deleted of the idle one", last.EventType(), last.ConversationID)
	}
}

// TestTempSweepsOnTimer checks that SweepEvery drops idle temp
// conversations by itself, with no request to trigger it.
func TestTempSweepsOnTimer(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pub := make(chan agent.Encoded, 16)
	st := openTemp(t, TempOptions{Config: agent.TempConfig{Idle: time.Minute}, Now: func() time.Time { return start.Add(time.Hour) },
		Publish: func(evs []agent.Encoded) {
			for _, e := range evs {
				pub <- e
			}
		}})
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
	if ev.Type != agent.AgentDeleted || ev.ConversationID != id || st.Has(id) {
		t.Fatalf("got %s of %s, has %v; want the idle one deleted", ev.Type, ev.ConversationID, st.Has(id))
	}
}

// TestTempVersion: Version moves with every applied Append (a sweep's
// deletes included), not with a refused one or a read.
func TestTempVersion(t *testing.T) {
	t.Parallel()
	now := time.Now()
	st := openTemp(t, TempOptions{Config: agent.TempConfig{MaxCount: 1, Idle: time.Minute}, Now: func() time.Time { return now }})
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
