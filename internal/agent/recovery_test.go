package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

func TestRecoverInterruptedByRestart(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	// A turn that was running when the process died: its user message
	// started a turn and nothing ended it.
	ctx := context.Background()
	rec := g.startTurnInStore(c)
	g.close()
	g.open()
	hist := g.history(c)
	last := hist[len(hist)-1]
	if last.Type != agent.MessageError || last.Code != agent.CodeInterruptedByRestart {
		t.Fatalf("last message %+v", last)
	}
	evs, err := g.st.Events(ctx, agent.EventQuery{ConversationID: c.ID, After: rec.Event.Seq, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ts []agent.Event
	for _, e := range evs {
		ts = append(ts, *e.Event)
	}
	if got := types(ts); got != "message:error error end" {
		t.Fatalf("recovery events %s", got)
	}
	if conv, _ := g.r.Conversation(ctx, c.ID); conv.Running {
		t.Error("still running after recovery")
	}
}

// TestStaleTurnIsBusyUntilRecovered: a conversation the store marks
// running without a turn in this runner (another instance's turn, or one of
// ours whose last write failed) is busy; recovery ends it when no live
// process runs it, and the conversation works again.
func TestStaleTurnIsBusyUntilRecovered(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	ctx := context.Background()
	g.startTurnInStore(c)
	if _, err := g.r.Send(ctx, c.ID, []agent.Content{agent.Text("again")}, ""); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("send: %v, want busy", err)
	}
	if err := g.r.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if conv, _ := g.r.Conversation(ctx, c.ID); conv.Running {
		t.Fatal("recovery left the stale turn running")
	}
	g.fake.Enqueue(llmtest.Reply{Text: "back"})
	if got := text(g.turn(c, "again")); got != "back" {
		t.Fatalf("turn after recovery streamed %q", got)
	}
}

// TestRecoverLeavesRunningTurnsAlone: periodic recovery does not end a turn
// this runner is running.
func TestRecoverLeavesRunningTurnsAlone(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	hold := make(chan struct{})
	g.fake.Enqueue(llmtest.Reply{Text: "still here", Hold: hold})
	ctx := context.Background()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := g.r.Send(ctx, c.ID, []agent.Content{agent.Text("hi")}, ""); err != nil {
		t.Fatal(err)
	}
	if err := g.r.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	close(hold)
	evs := untilEnd(t, ctx, sub)
	if got := types(evs); got != "message:user_message start_response append_text message:assistant_message end" {
		t.Fatalf("a running turn was disturbed by recovery: %s", got)
	}
}
