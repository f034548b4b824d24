package store

import (
	"context"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestNULBytes stores text holding U+0000 everywhere text goes (a
// system prompt, a message, a tool result, memory, search): PostgreSQL
// takes it as SQLite does, and it reads back unchanged.
func TestNULBytes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		s := open(t, dsn, Options{})
		ctx := context.Background()
		const nul = "before\x00after"
		cid := newID()
		create := createdRec(cid, "t")
		create.Conversation = &agent.Conversation{ID: cid, Title: "t", SystemPrompt: nul}
		create.Memory = []agent.ModelMessage{{Role: agent.RoleSystem, Content: []agent.Content{agent.Text(nul)}}}
		mustAppend(t, s, create)
		user := userRec(cid, nul, "")
		user.Memory = []agent.ModelMessage{{Role: agent.RoleUser, Content: []agent.Content{agent.Text(nul)}}}
		mustAppend(t, s, user)
		res := convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{Type: agent.MessageToolResult, ID: newID(), CallID: "c", Name: "n\x00", Result: nul}})
		mustAppend(t, s, res)

		c, err := s.Conversation(ctx, cid)
		if err != nil || c.SystemPrompt != nul {
			t.Fatalf("conversation %+v, %v", c, err)
		}
		ms, err := s.Messages(ctx, agent.MessageQuery{ConversationID: cid, Limit: 10})
		if err != nil || len(ms) != 2 || ms[0].Content[0].Body != nul || ms[1].Result != nul {
			t.Fatalf("messages %+v, %v", ms, err)
		}
		mem, err := s.Memory(ctx, cid)
		if err != nil || len(mem) != 2 || mem[1].Content[0].Body != nul {
			t.Fatalf("memory %+v, %v", mem, err)
		}
	})
}
