package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestStartRefusedLeavesNothing: a first send refused after its
// conversation's records were made (an unknown model or agent, the
// budget, tool results that answer nothing, a client's id that is taken,
// a closed runner) writes nothing: no conversation, stored or temp, no
// event, and the list's version (what caches key on) stays.
func TestStartRefusedLeavesNothing(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Budgets.Default = agent.Budget{Tokens: 10, Period: "day"} })
	ctx := context.Background()
	text := []agent.Content{agent.Text("hello")}
	str := func(s string) *string { return &s }
	events := func() int {
		t.Helper()
		evs, err := g.st.EncodedEvents(ctx, agent.EventQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	nothing := func(name string, before int, v0 uint64) {
		t.Helper()
		cs, total, err := g.r.Conversations(ctx, 0, 10)
		if err != nil || total != 0 || len(cs) != 0 {
			t.Errorf("%s: conversations %+v (total %d, %v), want none", name, cs, total, err)
		}
		if n := events(); n != before {
			t.Errorf("%s: %d events were written", name, n-before)
		}
		if v, _ := g.r.ListVersion(); v != v0 {
			t.Errorf("%s: the list's version moved from %d to %d", name, v0, v)
		}
	}
	for _, tc := range []struct {
		name string
		in   agent.StartInput
		code string
	}{
		{"unknown model", agent.StartInput{Content: text, New: &agent.NewConversation{Settings: agent.Settings{Model: str("nope")}}}, agent.CodeBadRequest},
		{"unknown agent", agent.StartInput{Content: text, New: &agent.NewConversation{Settings: agent.Settings{Agent: str("nobody")}}}, agent.CodeNotFound},
		{"results that answer nothing", agent.StartInput{Results: []agent.ToolResult{{CallID: "c1", Result: "x"}}, New: &agent.NewConversation{Temp: true}}, agent.CodeBadRequest},
		{"results that answer nothing, stored", agent.StartInput{Results: []agent.ToolResult{{CallID: "c1", Result: "x"}}, New: &agent.NewConversation{History: []agent.ModelMessage{{Role: agent.RoleUser, Content: text}}}}, agent.CodeBadRequest},
		{"a continuation of nothing", agent.StartInput{Content: text, After: "m1", New: &agent.NewConversation{}}, agent.CodeBadRequest},
		{"a client's bad id", agent.StartInput{ConversationID: "a b", Content: text, New: &agent.NewConversation{Open: true}}, agent.CodeBadRequest},
	} {
		before, v0 := events(), must(g.r.ListVersion())
		if _, err := g.r.Start(ctx, tc.in); agent.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
		nothing(tc.name, before, v0)
	}

	if err := g.st.AddUsage(ctx, agent.LocalUser, time.Now().UTC().Format(agent.DateFormat), 10, 0); err != nil { // the budget used up
		t.Fatal(err)
	}
	for _, temp := range []bool{false, true} {
		before, v0 := events(), must(g.r.ListVersion())
		if _, err := g.r.Start(ctx, agent.StartInput{Content: text, New: &agent.NewConversation{Temp: temp}}); agent.ErrorCode(err) != agent.CodeQuotaExceeded {
			t.Errorf("over the budget (temp %v): %v, want quota_exceeded", temp, err)
		}
		nothing("over the budget", before, v0)
	}
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: "chat-1", Content: text, New: &agent.NewConversation{Open: true}}); agent.ErrorCode(err) != agent.CodeQuotaExceeded {
		t.Errorf("a client's id over the budget: %v, want quota_exceeded", err)
	}
	if _, err := g.r.Conversation(ctx, "chat-1"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("the client's id after a refused first send: %v, want not_found", err)
	}

	g = newRig(t, nil)
	if err := g.r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	before, v0 := events(), must(g.r.ListVersion())
	if _, err := g.r.Start(ctx, agent.StartInput{Content: text, New: &agent.NewConversation{}}); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Errorf("after the runner closed: %v, want unavailable", err)
	}
	nothing("after the runner closed", before, v0)
}

// must is the version a ListVersion answers.
func must(v uint64, _ bool) uint64 { return v }

// TestStartSameNewIDOnce: two first sends with the same id a client
// chose, racing: one makes the conversation and its turn runs; the other
// finds it made when it writes, and is busy (or the same turn, with the
// same client id). Nothing of the loser is kept, and it deletes nothing:
// before, the loser of this race deleted the winner's conversation.
func TestStartSameNewIDOnce(t *testing.T) {
	t.Parallel()
	for _, same := range []bool{false, true} {
		g := newRig(t, nil)
		ctx := context.Background()
		hold := make(chan struct{})
		g.fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
		var sends atomic.Int32
		read, goOn := make(chan struct{}), make(chan struct{})
		agent.SetSendHook(g.r, func(string) {
			if sends.Add(1) == 1 { // the loser waits here, having checked everything
				close(read)
				<-goOn
			}
		})
		clientID := func(s string) string {
			if same {
				return "same"
			}
			return s
		}
		lost := make(chan error, 1)
		go func() {
			_, err := g.r.Start(ctx, agent.StartInput{ConversationID: "chat-1", Content: []agent.Content{agent.Text("loser")}, ClientID: clientID("a"), New: &agent.NewConversation{Open: true}})
			lost <- err
		}()
		<-read
		won, err := g.r.Start(ctx, agent.StartInput{ConversationID: "chat-1", Content: []agent.Content{agent.Text("winner")}, ClientID: clientID("b"), New: &agent.NewConversation{Open: true}})
		if err != nil || !won.Created || won.ConversationID != "chat-1" {
			t.Fatalf("same client id %v: the winner: %+v %v", same, won, err)
		}
		close(goOn)
		err = <-lost
		switch {
		case same && err != nil:
			t.Errorf("same client id: the other send: %v, want the same turn", err)
		case !same && !errors.Is(err, agent.ErrBusy):
			t.Errorf("the loser: %v, want busy", err)
		}
		close(hold)
		waitIdle(t, g.r, "chat-1")
		var users []string
		for _, m := range g.history(agent.Conversation{ID: "chat-1"}) {
			if m.Type == agent.MessageUser {
				users = append(users, m.Content[0].Body)
			}
		}
		if len(users) != 1 || users[0] != "winner" {
			t.Errorf("same client id %v: user messages %q, want the winner's alone", same, users)
		}
	}
}
