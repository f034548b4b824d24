package agenttest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// QueueContract checks st's queued sends: order and positions, a send that
// goes first, the queued count, cancelling (not_found, conflict), starting
// one (only while no turn runs), and a deleted conversation's queue.
func QueueContract(t *testing.T, st agent.Store) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cid := id()
	create := &agent.Record{
		Event:        agent.AllEvent{Kind: agent.KindAgent, ID: id(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid}},
		Conversation: &agent.Conversation{ID: cid, CreatedAt: now, UpdatedAt: now},
	}
	if err := st.Append(ctx, create); err != nil {
		t.Fatal(err)
	}
	ev := func(e agent.Event) agent.AllEvent {
		return agent.AllEvent{Kind: agent.KindConversation, ID: id(), Date: now, ConversationID: cid, Event: &e}
	}
	enqueue := func(text, clientID string, front bool) (string, int, error) {
		q := &agent.QueuedSend{MessageID: id(), ConversationID: cid, Content: []agent.Content{agent.Text(text)}, ClientID: clientID, Date: now, Front: front}
		rec := &agent.Record{Event: ev(agent.Event{Type: agent.EventQueued, MessageID: q.MessageID, Content: q.Content}), Enqueue: q}
		err := st.Append(ctx, rec)
		return q.MessageID, rec.Event.Event.Position, err
	}
	dequeue := func(msgID string, start bool) error {
		if !start {
			return st.Append(ctx, &agent.Record{Event: ev(agent.Event{Type: agent.EventQueueCancelled, MessageID: msgID}), Dequeue: msgID})
		}
		m := agent.Message{Type: agent.MessageUser, ID: msgID, ConversationID: cid, Date: now, Content: []agent.Content{agent.Text("started")}}
		return st.Append(ctx, &agent.Record{Event: ev(agent.Event{Type: agent.EventMessage, Message: &m}), Dequeue: msgID, Turn: agent.TurnStart})
	}
	order := func() []string {
		t.Helper()
		q, err := st.Queue(ctx, agent.QueueQuery{ConversationID: cid})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range q {
			out = append(out, s.Content[0].Body)
		}
		c, err := st.Conversation(ctx, cid)
		if err != nil || c.Queued != len(q) {
			t.Fatalf("conversation %+v, %v; want queued %d", c, err, len(q))
		}
		list, _, err := st.Conversations(ctx, 0, 1000)
		if i := slices.IndexFunc(list, func(c agent.Conversation) bool { return c.ID == cid }); err != nil || i < 0 || list[i].Queued != len(q) {
			t.Fatalf("the list %+v, %v; want %s with queued %d", list, err, cid, len(q))
		}
		return out
	}
	same := func(got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("queue %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("queue %q, want %q", got, want)
			}
		}
	}
	wantCode := func(err error, code string) {
		t.Helper()
		if err == nil || agent.ErrorCode(err) != code {
			t.Fatalf("got %v, want code %s", err, code)
		}
	}

	a, pa, err := enqueue("a", "ka", false)
	if err != nil || pa != 1 {
		t.Fatalf("enqueue a: position %d, %v", pa, err)
	}
	b, pb, err := enqueue("b", "", false)
	if err != nil || pb != 2 {
		t.Fatalf("enqueue b: position %d, %v", pb, err)
	}
	_, _, err = enqueue("again", "ka", false)
	wantCode(err, agent.CodeBadRequest)
	f, pf, err := enqueue("f", "", true)
	if err != nil || pf != 1 {
		t.Fatalf("enqueue first: position %d, %v", pf, err)
	}
	same(order(), "f", "a", "b")
	if q := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, ClientID: "ka", Limit: 1})); len(q) != 1 || q[0].MessageID != a || q[0].Position != 2 {
		t.Fatalf("by client_id: %+v, want %s at position 2", q, a)
	}
	if q := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, ClientID: "nobody", Limit: 1})); len(q) != 0 {
		t.Fatalf("by an unused client_id: %+v", q)
	}

	wantCode(dequeue(id(), false), agent.CodeNotFound)
	if err := dequeue(a, false); err != nil {
		t.Fatal(err)
	}
	same(order(), "f", "b")

	// Starting the first marks the conversation running; starting another
	// while it runs is busy (as any start is) and leaves it queued.
	if err := dequeue(f, true); err != nil {
		t.Fatal(err)
	}
	same(order(), "b")
	wantCode(dequeue(b, true), agent.CodeBusy)
	same(order(), "b")
	wantCode(dequeue(f, false), agent.CodeConflict) // started: too late to cancel
	end := func() *agent.Record {
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: id(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentTurnEnded, ConversationID: cid}}, Turn: agent.TurnEnd}
	}
	if err := st.Append(ctx, end()); err != nil {
		t.Fatal(err)
	}
	if err := dequeue(b, true); err != nil {
		t.Fatal(err)
	}
	same(order())
	ms, err := st.Messages(ctx, agent.MessageQuery{ConversationID: cid, Limit: 10})
	if err != nil || len(ms) != 2 || ms[0].ID != f || ms[1].ID != b {
		t.Fatalf("history %+v, %v; want the two started sends", ms, err)
	}
	if err := st.Append(ctx, end()); err != nil {
		t.Fatal(err)
	}

	// The queue is bounded in count and bytes: past either, bad_request,
	// nothing queued.
	for i := range agent.MaxQueued {
		if _, _, err := enqueue("fill", "", false); err != nil {
			t.Fatalf("enqueue %d of %d: %v", i+1, agent.MaxQueued, err)
		}
	}
	_, _, err = enqueue("one too many", "", false)
	wantCode(err, agent.CodeBadRequest)
	if q, _ := st.Queue(ctx, agent.QueueQuery{ConversationID: cid}); len(q) != agent.MaxQueued {
		t.Fatalf("%d queued, want %d", len(q), agent.MaxQueued)
	}
	// Pages: by offset and limit, in bytes, and the one send of a
	// client_id with its place; each with positions.
	all := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid}))
	for i, q := range all {
		if q.Position != i+1 {
			t.Fatalf("send %d has position %d", i, q.Position)
		}
	}
	if head := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, Limit: 1})); len(head) != 1 || head[0].MessageID != all[0].MessageID || head[0].Position != 1 {
		t.Fatalf("head %+v, want the first of %d", head, len(all))
	}
	if p := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, Offset: 40, Limit: 3})); len(p) != 3 || p[0].MessageID != all[40].MessageID || p[2].Position != 43 {
		t.Fatalf("offset 40 limit 3: %+v", p)
	}
	fill, _ := json.Marshal([]agent.Content{agent.Text("fill")})
	if p := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, Offset: 10, Bytes: 3*len(fill) + len(fill)/2})); len(p) != 3 || p[0].MessageID != all[10].MessageID || p[0].Position != 11 {
		t.Fatalf("offset 10, bytes for three and a half: %d sends", len(p))
	}
	if p := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, Bytes: 1})); len(p) != 1 {
		t.Fatalf("a page bounded below one send: %d sends, want that one", len(p))
	}
	if p := must(st.Queue(ctx, agent.QueueQuery{ConversationID: cid, ClientID: "ka", Limit: 1})); len(p) != 0 {
		t.Fatalf("client_id of a started send: %+v", p)
	}
	for _, q := range all {
		if err := dequeue(q.MessageID, false); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = enqueue(strings.Repeat("x", agent.MaxQueuedBytes/2+1), "", false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = enqueue(strings.Repeat("y", agent.MaxQueuedBytes/2+1), "", false)
	wantCode(err, agent.CodeBadRequest)

	// A deleted conversation's queue goes with it.
	if _, _, err := enqueue("c", "", false); err != nil {
		t.Fatal(err)
	}
	del := &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: id(), Date: now, ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentDeleted, ConversationID: cid}}}
	if err := st.Append(ctx, del); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.Queue(ctx, agent.QueueQuery{ConversationID: cid}); len(q) != 0 {
		t.Fatalf("queue of a deleted conversation: %+v", q)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
