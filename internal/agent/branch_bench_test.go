package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// BenchmarkSwitchBranch1000 moves the head of a 1000-message conversation
// (user messages and answers of ~400 bytes) between two branches that part
// at its 10th message: each switch reads the tree, the path's 990-odd
// messages, rebuilds working memory from them and writes it (one record).
func BenchmarkSwitchBranch1000(b *testing.B) {
	g := newRig(b, nil)
	ctx := context.Background()
	c, err := g.r.Create(ctx, agent.NewConversation{Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("lorem ipsum dolor sit amet ", 15)
	msg := func(typ string) *agent.Record {
		m := agent.Message{Type: typ, ID: agent.NewID(), ConversationID: c.ID, Date: time.Now(), Content: []agent.Content{agent.Text(body)}}
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: c.ID, Event: &agent.Event{Type: agent.EventMessage, Message: &m}}}
	}
	var recs []*agent.Record
	for i := range 1000 {
		typ := agent.MessageUser
		if i%2 == 1 {
			typ = agent.MessageAssistant
		}
		recs = append(recs, msg(typ))
	}
	fork := recs[9].Event.Event.Message.ID // an answer
	last := recs[999].Event.Event.Message.ID
	other := msg(agent.MessageUser)
	other.Head = &fork
	recs = append(recs, other)
	if err := g.st.Append(ctx, recs...); err != nil {
		b.Fatal(err)
	}
	targets := []string{last, other.Event.Event.Message.ID}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := g.r.SwitchBranch(ctx, c.ID, targets[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}
