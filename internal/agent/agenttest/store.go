// Package agenttest holds the contract every agent.Store keeps, as a test
// any implementation runs: the database on SQLite and PostgreSQL, and the
// in-memory store of temp conversations.
package agenttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// StoreContract checks st: conversations, messages paged by after, offset
// and limit, client ids, working memory (appended, and replaced by a
// compaction with the context size), turn state, rename and delete.
// events returns what st has published so far.
func StoreContract(t *testing.T, st agent.Store, events func() []agent.AllEvent) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mustAppend := func(recs ...*agent.Record) {
		t.Helper()
		if err := st.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	agentRec := func(typ, cid, title string) *agent.Record {
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: id(), Date: now, ConversationID: cid,
			Agent: &agent.AgentEvent{Type: typ, ConversationID: cid, Title: title}}}
	}
	create := func(title string) string {
		cid := id()
		rec := agentRec(agent.AgentCreated, cid, title)
		rec.Conversation = &agent.Conversation{ID: cid, Title: title, CreatedAt: now, UpdatedAt: now}
		rec.Memory = []agent.ModelMessage{{Role: agent.RoleSystem, Content: []agent.Content{agent.Text("sys")}}}
		mustAppend(rec)
		return cid
	}
	msgRec := func(cid, text, clientID string) *agent.Record {
		m := agent.Message{Type: agent.MessageUser, ID: id(), ConversationID: cid, Date: now, Content: []agent.Content{agent.Text(text)}, ClientID: clientID}
		return &agent.Record{
			Event:  agent.AllEvent{Kind: agent.KindConversation, ID: id(), Date: now, ConversationID: cid, Event: &agent.Event{Type: agent.EventMessage, Message: &m}},
			Memory: []agent.ModelMessage{{Role: agent.RoleUser, Content: m.Content}},
		}
	}
	wantCode := func(err error, code string) {
		t.Helper()
		if agent.ErrorCode(err) != code || err == nil {
			t.Fatalf("got %v, want code %s", err, code)
		}
	}

	cid := create("first")
	c, err := st.Conversation(ctx, cid)
	if err != nil || c.ID != cid || c.Title != "first" || c.Running {
		t.Fatalf("conversation: %+v, %v", c, err)
	}
	_, err = st.Conversation(ctx, id())
	wantCode(err, agent.CodeNotFound)

	// Messages: in order; after, offset and limit page them.
	start := msgRec(cid, "m0", "k0")
	start.Turn = agent.TurnStart
	mustAppend(start)
	if c, _ := st.Conversation(ctx, cid); !c.Running {
		t.Fatal("not running after TurnStart")
	}
	// A second start while the turn runs is refused whole: the store is
	// where two instances' starts of one conversation meet.
	again := msgRec(cid, "second start", "k-again")
	again.Turn = agent.TurnStart
	wantCode(st.Append(ctx, again), agent.CodeBusy)
	if _, err := st.MessageByClientID(ctx, cid, "k-again"); agent.ErrorCode(err) != agent.CodeNotFound {
		t.Fatalf("the refused start's message: %v, want not_found", err)
	}
	for _, text := range []string{"m1", "m2", "m3"} {
		mustAppend(msgRec(cid, text, ""))
	}
	end := agentRec(agent.AgentTurnEnded, cid, "")
	end.Turn = agent.TurnEnd
	mustAppend(end)
	if c, _ := st.Conversation(ctx, cid); c.Running || c.MessageCount != 4 {
		t.Fatalf("after TurnEnd: %+v", c)
	}
	texts := func(ms []agent.Message) (out []string) {
		for _, m := range ms {
			out = append(out, m.Content[0].Body)
		}
		return out
	}
	all, err := st.Messages(ctx, agent.MessageQuery{ConversationID: cid, Limit: 10})
	if err != nil || len(all) != 4 || texts(all)[3] != "m3" {
		t.Fatalf("messages: %v, %v", texts(all), err)
	}
	page, _ := st.Messages(ctx, agent.MessageQuery{ConversationID: cid, Offset: 1, Limit: 2})
	if got := texts(page); len(got) != 2 || got[0] != "m1" || got[1] != "m2" {
		t.Fatalf("offset 1 limit 2: %v", got)
	}
	if all[0].Seq > 0 {
		after, _ := st.Messages(ctx, agent.MessageQuery{ConversationID: cid, After: all[1].Seq, Limit: 10})
		if got := texts(after); len(got) != 2 || got[0] != "m2" {
			t.Fatalf("after the second: %v", got)
		}
	}
	if past, err := st.Messages(ctx, agent.MessageQuery{ConversationID: cid, After: 1 << 40, Limit: 10}); err != nil || len(past) != 0 {
		t.Fatalf("after everything: %v, %v", texts(past), err)
	}
	_, err = st.Messages(ctx, agent.MessageQuery{ConversationID: id(), Limit: 10})
	wantCode(err, agent.CodeNotFound)

	// Client ids: found, unknown, and a second use refused with its batch.
	if m, err := st.MessageByClientID(ctx, cid, "k0"); err != nil || m.Content[0].Body != "m0" {
		t.Fatalf("by client id: %+v, %v", m, err)
	}
	_, err = st.MessageByClientID(ctx, cid, "nope")
	if !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("unknown client id: %v", err)
	}
	wantCode(st.Append(ctx, msgRec(cid, "again", "k0"), agentRec(agent.AgentRenamed, cid, "lost")), agent.CodeBadRequest)
	if c, _ := st.Conversation(ctx, cid); c.Title != "first" || c.MessageCount != 4 {
		t.Fatalf("a refused batch changed the conversation: %+v", c)
	}

	// Working memory: in append order.
	mem, err := st.Memory(ctx, cid)
	if err != nil || len(mem) != 5 || mem[0].Role != agent.RoleSystem || mem[4].Content[0].Body != "m3" {
		t.Fatalf("memory: %+v, %v", mem, err)
	}

	// A compaction: its summary message replaces the working memory and
	// sets the context size; the history keeps everything.
	sum := agent.Message{Type: agent.MessageSummary, ID: id(), ConversationID: cid, Date: now, Summary: "s", Replaces: 3, TokensBefore: 90, TokensAfter: 20}
	compact := &agent.Record{
		Event:         agent.AllEvent{Kind: agent.KindConversation, ID: id(), Date: now, ConversationID: cid, Event: &agent.Event{Type: agent.EventMessage, Message: &sum}},
		Memory:        []agent.ModelMessage{mem[0], {Role: agent.RoleSummary, Content: []agent.Content{agent.Text("s")}}, mem[4]},
		ReplaceMemory: true,
		Context:       &agent.ContextSize{Tokens: 20, Window: 8192, Bytes: 77},
	}
	mustAppend(compact)
	mem, err = st.Memory(ctx, cid)
	if err != nil || len(mem) != 3 || mem[1].Role != agent.RoleSummary || mem[2].Content[0].Body != "m3" {
		t.Fatalf("memory after compaction: %+v, %v", mem, err)
	}
	if c, _ := st.Conversation(ctx, cid); c.MessageCount != 5 || c.Context == nil || *c.Context != (agent.ContextSize{Tokens: 20, Window: 8192, Bytes: 77}) {
		t.Fatalf("conversation after compaction: %+v (context %+v)", c, c.Context)
	}
	if ms, _ := st.Messages(ctx, agent.MessageQuery{ConversationID: cid, Limit: 10}); len(ms) != 5 || ms[4].Type != agent.MessageSummary || ms[4].Replaces != 3 {
		t.Fatalf("history after compaction: %+v", ms)
	}

	// The list: most recently updated first, with the total.
	later := now.Add(time.Hour)
	second := create("second")
	rec := agentRec(agent.AgentRenamed, second, "renamed")
	rec.Event.Date = later
	mustAppend(rec)
	list, total, err := st.Conversations(ctx, 0, 10)
	if err != nil || total < 2 || len(list) < 2 || list[0].ID != second || list[0].Title != "renamed" {
		t.Fatalf("list: %+v, %d, %v", list, total, err)
	}

	// A stale mark (a branch switch): memory is not handed out, also after
	// an append, until a record replaces it.
	stale := msgRec(second, "s1", "")
	stale.StaleMemory = true
	mustAppend(stale)
	if _, err := st.Memory(ctx, second); !errors.Is(err, agent.ErrStaleMemory) {
		t.Fatalf("memory marked stale: %v", err)
	}
	more := msgRec(second, "s2", "")
	more.Memory = []agent.ModelMessage{{Role: agent.RoleUser, Content: []agent.Content{agent.Text("s2")}}}
	mustAppend(more)
	if _, err := st.Memory(ctx, second); !errors.Is(err, agent.ErrStaleMemory) {
		t.Fatalf("memory marked stale, then appended to: %v", err)
	}
	fresh := msgRec(second, "s3", "")
	fresh.Memory = []agent.ModelMessage{{Role: agent.RoleSystem, Content: []agent.Content{agent.Text("sys")}}, {Role: agent.RoleUser, Content: []agent.Content{agent.Text("s3")}}}
	fresh.ReplaceMemory = true
	mustAppend(fresh)
	if mem, err := st.Memory(ctx, second); err != nil || len(mem) != 2 || mem[1].Content[0].Body != "s3" {
		t.Fatalf("memory replaced after the stale mark: %+v, %v", mem, err)
	}

	// Delete: gone with its history.
	mustAppend(agentRec(agent.AgentDeleted, cid, ""))
	_, err = st.Conversation(ctx, cid)
	wantCode(err, agent.CodeNotFound)
	_, err = st.Messages(ctx, agent.MessageQuery{ConversationID: cid, Limit: 10})
	wantCode(err, agent.CodeNotFound)

	// Every write was published, in order.
	var types []string
	for _, ev := range events() {
		if ev.ConversationID == cid {
			types = append(types, ev.EventType())
		}
	}
	want := []string{"created", "message", "message", "message", "message", "turn_ended", "message", "deleted"}
	if len(types) != len(want) {
		t.Fatalf("published %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("published %v, want %v", types, want)
		}
	}
	t.Run("queue", func(t *testing.T) { QueueContract(t, st) })
	t.Run("approval", func(t *testing.T) { ApprovalContract(t, st) })
}

func id() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
