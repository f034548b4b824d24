package store

import (
	"context"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestMessageRunUpdatesOnce: a run of messages alone in one request (a
// seeded history) updates its conversation's row once, and what that row
// says is what one update per message said: the count, the head, the
// date; a record after the run (a turn's start) sees it, and each message
// follows the one before.
func TestMessageRunUpdatesOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := open(t, dsn, Options{})
		cid := agent.NewID()
		c := agent.Conversation{ID: cid}
		recs := []*agent.Record{{
			Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), ConversationID: cid, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: cid}},
			Conversation: &c,
		}}
		msg := func(text string) *agent.Record {
			m := agent.Message{Type: agent.MessageUser, ID: agent.NewID(), ConversationID: cid, Content: []agent.Content{agent.Text(text)}}
			return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), ConversationID: cid, Event: &agent.Event{Type: agent.EventMessage, Message: &m}},
				Memory: []agent.ModelMessage{{Role: agent.RoleUser, Content: m.Content}}}
		}
		for _, text := range []string{"one", "two", "three"} {
			recs = append(recs, msg(text))
		}
		start := msg("four")
		start.Turn = agent.TurnStart
		recs = append(recs, start)
		if err := st.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		got, err := st.Conversation(ctx, cid)
		if err != nil || got.MessageCount != 4 || got.Head != start.Event.Event.Message.ID || !got.Running {
			t.Fatalf("after a run and a turn's start: %+v, %v", got, err)
		}
		before := got.UpdatedAt
		if err := st.Append(ctx, msg("five"), msg("six")); err != nil {
			t.Fatal(err)
		}
		got, err = st.Conversation(ctx, cid)
		if err != nil || got.MessageCount != 6 || got.UpdatedAt.Before(before) {
			t.Fatalf("after a second run: %+v, %v", got, err)
		}
		ms, err := st.Messages(ctx, agent.MessageQuery{ConversationID: cid})
		if err != nil || len(ms) != 6 || got.Head != ms[5].ID {
			t.Fatalf("messages %d, %v; head %q", len(ms), err, got.Head)
		}
		for i := 1; i < len(ms); i++ {
			if ms[i].ParentID != ms[i-1].ID {
				t.Errorf("message %d follows %q, not the one before it", i, ms[i].ParentID)
			}
		}
	})
}
