package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestLastTurn: a turn that ended well is nothing to tell; a failed one
// is its error and starts at its user message; a failed regenerate starts
// after the end of the answer it replaced, so a replay from there is that
// turn alone.
func TestLastTurn(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	ctx := context.Background()
	g.fake.Enqueue(llmtest.Reply{Text: "a1"})
	g.turn(c, "q1")
	if lt, err := g.r.LastTurn(ctx, c.ID); err != nil || lt.Failed() || lt.Seq != 0 {
		t.Fatalf("after a turn that ended well: %+v %v", lt, err)
	}

	g.fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "no such thing"})
	var sent agent.SendResult
	g.during(c, func(ctx context.Context) (err error) {
		sent, err = g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("q2")}})
		return err
	})
	lt, err := g.r.LastTurn(ctx, c.ID)
	if err != nil || lt.Error == nil || lt.Error.Code != agent.CodeModelError || !strings.Contains(lt.Error.Message, "no such thing") || lt.Seq != sent.Seq {
		t.Fatalf("after a failed send: %+v %v (its user message's seq %d)", lt, err, sent.Seq)
	}

	g.fake.Enqueue(llmtest.Reply{Text: "a2"})
	g.turn(c, "q3")
	g.fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "not again"})
	g.during(c, func(ctx context.Context) error { _, err := g.r.Regenerate(ctx, c.ID, ""); return err })
	lt, err = g.r.LastTurn(ctx, c.ID)
	if err != nil || lt.Error == nil || !strings.Contains(lt.Error.Message, "not again") {
		t.Fatalf("after a failed regenerate: %+v %v", lt, err)
	}
	sctx, cancel := context.WithTimeout(ctx, testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(sctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, lt.Seq-1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := types(untilEnd(t, sctx, sub)); got != "message:error error end" {
		t.Fatalf("the replay of the failed regenerate: %s", got)
	}
	if lt, _ := g.r.LastTurn(agent.WithPrincipal(ctx, agent.Principal{UserID: "someone-else", Role: agent.RoleMember}), c.ID); lt.Failed() {
		t.Errorf("another user read how the turn ended: %+v", lt)
	}
}
