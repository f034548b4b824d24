package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestNothingRunsForDisabledOwner: once a user is disabled, the decision
// of their waiting call (by an admin) makes no model call for them, and
// their queued send does not start; it starts when they are enabled again
// and their conversation's next turn ends.
func TestNothingRunsForDisabledOwner(t *testing.T) {
	t.Parallel()
	g, _ := approvalRig(t)
	ctx := context.Background()
	ann := agent.User{ID: "ann", Name: "Ann", Role: agent.RoleMember, CreatedAt: time.Now()}
	if err := g.st.CreateUser(ctx, ann); err != nil {
		t.Fatal(err)
	}
	actx := agent.WithPrincipal(ctx, ann.Principal())
	c, err := g.r.Create(actx, agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "d1", Name: "calc__add", Arguments: `{}`}}})
	if _, err := g.r.Start(actx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	waitWaiting(t, g.r, c.ID, 1)
	if res, err := g.r.Start(actx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("and then")}, OnBusy: agent.OnBusyQueue}); err != nil || !res.Queued {
		t.Fatalf("queue: %+v %v", res, err)
	}
	ann.Disabled = true
	if err := g.st.UpdateUser(ctx, ann); err != nil {
		t.Fatal(err)
	}
	calls := len(g.fake.Requests())
	g.fake.Enqueue(llmtest.Reply{Text: "the answer after the decision"})
	g.fake.Enqueue(llmtest.Reply{Text: "the queued send's answer"})
	if err := g.r.Approve(agent.WithPrincipal(ctx, agent.Local), c.ID, agent.ApprovalInput{CallID: "d1", Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, g.r, c.ID)
	if n := len(g.fake.Requests()); n != calls {
		t.Errorf("%d model calls after the owner was disabled, want none", n-calls)
	}
	q, err := g.r.Queue(ctx, c.ID, agent.QueueQuery{Limit: 10})
	if err != nil || q.Total != 1 {
		t.Fatalf("queue %+v %v, want the send still queued", q, err)
	}
	hist := g.history(c)
	last := hist[len(hist)-1]
	if last.Type != agent.MessageError || last.Code != agent.CodeForbidden || !strings.Contains(last.Error, "disabled") {
		t.Errorf("the resumed turn ended with %+v, want a forbidden error naming the disabled owner", last)
	}
	// An admin's send to the disabled user's conversation runs nothing either.
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("admin here")}}); agent.ErrorCode(err) != agent.CodeForbidden {
		t.Errorf("a send to a disabled owner's conversation: %v, want forbidden", err)
	}
}
