package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// approvalRig is a rig whose calc__add waits for approval.
func approvalRig(t *testing.T) (*rig, *fakeTools) {
	tools := &fakeTools{}
	fake, url := llmtest.NewHTTPServer(t)
	g := &rig{t: t, dbPath: t.TempDir() + "/agentik.db", fake: fake, url: url, tools: tools,
		approval: func(name string) bool { return name == "calc__add" }}
	g.open()
	t.Cleanup(g.close)
	return g, tools
}

// waitWaiting waits until the conversation waits for n decisions.
func waitWaiting(t *testing.T, r *agent.Runner, id string, n int) agent.Conversation {
	t.Helper()
	for range 1000 {
		c, err := r.Conversation(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Waiting) == n {
			return c
		}
		time.Sleep(5 * time.Millisecond)
	}
	c, _ := r.Conversation(context.Background(), id)
	t.Fatalf("conversation %+v, want %d waiting", c, n)
	return c
}

func (g *rig) lastToolMessages() []string {
	g.t.Helper()
	reqs := g.fake.Requests()
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			out = append(out, m.ToolCallID+"="+m.Content)
		}
	}
	return out
}

// TestApprovalSurvivesRestart: a call that needs approval waits, stored,
// through a restart; approving it with edited arguments runs the tool with
// them, and the turn ends with the model's answer.
func TestApprovalSurvivesRestart(t *testing.T) {
	g, tools := approvalRig(t)
	c := g.create(false)
	ctx := context.Background()
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{"a":1}`}, {ID: "c2", Name: "calc__fail", Arguments: `{}`}}})
	if _, err := g.r.Send(ctx, c.ID, []agent.Content{agent.Text("add")}, ""); err != nil {
		t.Fatal(err)
	}
	w := waitWaiting(t, g.r, c.ID, 1)
	if !w.Running || w.Waiting[0] != "c1" {
		t.Fatalf("waiting conversation %+v", w)
	}
	if len(tools.calls) != 0 {
		t.Fatalf("tools ran before the decision: %v", tools.calls)
	}
	g.close()
	g.open() // recovery must not end the waiting turn
	w = waitWaiting(t, g.r, c.ID, 1)
	if !w.Running {
		t.Fatalf("after the restart: %+v", w)
	}
	err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "c1", Decision: "approve", Arguments: []byte(`[1]`)})
	if !errors.Is(err, agent.ErrBadRequest) {
		t.Fatalf("approve with arguments that are not an object: %v, want bad_request", err)
	}
	if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "nope", Decision: "approve"}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("approve of an unknown call: %v, want not_found", err)
	}
	if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "c1", Decision: "maybe"}); !errors.Is(err, agent.ErrBadRequest) {
		t.Fatalf("unknown decision: %v, want bad_request", err)
	}
	waitWaiting(t, g.r, c.ID, 1) // bad input changed nothing
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "c1", Decision: "approve", Arguments: []byte(`{"a":2}`)}); err != nil {
		t.Fatal(err)
	}
	if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "c1", Decision: "deny"}); !errors.Is(err, agent.ErrConflict) {
		t.Fatalf("second decision: %v, want conflict", err)
	}
	waitIdle(t, g.r, c.ID)
	hist := g.history(c)
	if last := hist[len(hist)-1]; last.Type != agent.MessageAssistant || last.Content[0].Body != "done" {
		t.Fatalf("last message %+v", last)
	}
	tools.mu.Lock()
	calls := strings.Join(tools.calls, ";")
	tools.mu.Unlock()
	if calls != `calc__add {"a":2};calc__fail {}` {
		t.Errorf("tool calls %q, want the edited arguments, then the call that needed no approval", calls)
	}
	if got, _ := g.r.Conversation(ctx, c.ID); len(got.Waiting) != 0 {
		t.Errorf("still waiting: %+v", got)
	}
}

// TestApprovalDenyAndInterrupt: a denial reaches the model with its
// reason; interrupt ends a waiting turn.
func TestApprovalDenyAndInterrupt(t *testing.T) {
	for _, temp := range []bool{false, true} {
		g, tools := approvalRig(t)
		c := g.create(temp)
		ctx := context.Background()
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "d1", Name: "calc__add", Arguments: `{}`}}})
		g.fake.Enqueue(llmtest.Reply{Text: "ok, I will not"})
		if _, err := g.r.Send(ctx, c.ID, []agent.Content{agent.Text("add")}, ""); err != nil {
			t.Fatal(err)
		}
		waitWaiting(t, g.r, c.ID, 1)
		if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "d1", Decision: "deny", Reason: "not today"}); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, g.r, c.ID)
		if got := g.lastToolMessages(); len(got) != 1 || !strings.Contains(got[0], "denied") || !strings.Contains(got[0], "not today") {
			t.Errorf("temp %v: the model saw %q, want the denial with its reason", temp, got)
		}
		if len(tools.calls) != 0 {
			t.Errorf("a denied tool ran: %v", tools.calls)
		}

		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "i1", Name: "calc__add", Arguments: `{}`}}})
		if _, err := g.r.Send(ctx, c.ID, []agent.Content{agent.Text("again")}, ""); err != nil {
			t.Fatal(err)
		}
		waitWaiting(t, g.r, c.ID, 1)
		if ok, err := g.r.Interrupt(ctx, c.ID); err != nil || !ok {
			t.Fatalf("interrupt of a waiting turn: %v %v", ok, err)
		}
		got, _ := g.r.Conversation(ctx, c.ID)
		if got.Running || len(got.Waiting) != 0 {
			t.Fatalf("after interrupt: %+v", got)
		}
		if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "i1", Decision: "approve"}); !errors.Is(err, agent.ErrConflict) {
			t.Errorf("approve after the interrupt: %v, want conflict (the call no longer waits)", err)
		}
		hist := g.history(c)
		if last := hist[len(hist)-1]; last.Type != agent.MessageToolResult || !last.IsError {
			t.Errorf("last message %+v, want the interrupted tool result", last)
		}
	}
}
