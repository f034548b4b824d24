package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// withAnn makes the user ann, whose turns then run.
func withAnn(t *testing.T, g *rig) {
	t.Helper()
	if err := g.st.CreateUser(context.Background(), agent.User{ID: "ann", Name: "Ann", Role: agent.RoleMember, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// inboxOf lists ctx's principal's items in state.
func inboxOf(t *testing.T, g *rig, ctx context.Context, state string) []agent.InboxItem {
	t.Helper()
	items, err := g.app.Inbox.List(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestInboxApproval: a call waiting for approval is an item of its
// owner's inbox only (not another member's, nor an admin's own); answered
// from the inbox the turn goes on; the item is then resolved by its
// answerer, and a late answer on either surface is a conflict naming who
// answered and when.
func TestInboxApproval(t *testing.T) {
	t.Parallel()
	g, _ := approvalRig(t)
	withAnn(t, g)
	c, err := g.r.Create(ann, agent.NewConversation{Title: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{"a":1}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	if _, err := g.r.Start(ann, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	waitWaiting(t, g.r, c.ID, 1)
	items := inboxOf(t, g, ann, "")
	if len(items) != 1 {
		t.Fatalf("ann's inbox %+v, want the waiting call", items)
	}
	it := items[0]
	if it.Kind != agent.InboxApproval || it.ConversationID != c.ID || it.CallID != "c1" || it.State != agent.InboxPending ||
		it.Title != "calc__add" || it.Detail.Arguments != `{"a":1}` || it.Detail.Conversation != "nightly" || it.CreatedAt.IsZero() {
		t.Fatalf("item %+v", it)
	}
	if it.ID != agent.InboxID(agent.InboxApproval, c.ID, "c1") {
		t.Fatalf("item id %q", it.ID)
	}
	for name, ctx := range map[string]context.Context{"bob": bob, "an admin": adm} {
		if got := inboxOf(t, g, ctx, agent.InboxPending); len(got) != 0 {
			t.Errorf("%s's inbox holds ann's item: %+v", name, got)
		}
	}
	if err := g.app.Inbox.Answer(bob, it.ID, agent.InboxAnswer{Decision: agent.DecisionApprove}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("bob answers ann's item: %v, want not_found", err)
	}
	if err := g.app.Inbox.Answer(ann, it.ID, agent.InboxAnswer{Action: agent.ElicitAccept}); !errors.Is(err, agent.ErrBadRequest) {
		t.Fatalf("an elicitation's answer to an approval: %v, want bad_request", err)
	}
	if _, err := g.app.Inbox.List(ann, "done"); !errors.Is(err, agent.ErrBadRequest) {
		t.Fatalf("unknown state: %v, want bad_request", err)
	}
	if err := g.app.Inbox.Answer(ann, "approval.nope", agent.InboxAnswer{Decision: agent.DecisionApprove}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("malformed id: %v, want not_found", err)
	}
	waitWaiting(t, g.r, c.ID, 1) // nothing changed
	if err := g.app.Inbox.Answer(ann, it.ID, agent.InboxAnswer{Decision: agent.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, g.r, c.ID)
	if got := inboxOf(t, g, ann, agent.InboxPending); len(got) != 0 {
		t.Fatalf("pending after the answer: %+v", got)
	}
	res := inboxOf(t, g, ann, agent.InboxResolved)
	if len(res) != 1 || res[0].ID != it.ID || res[0].State != agent.InboxResolved || res[0].ResolvedBy != "ann" || res[0].ResolvedAt == nil || res[0].Detail.Decision != agent.DecisionApprove {
		t.Fatalf("resolved %+v", res)
	}
	err = g.r.Approve(ann, c.ID, agent.ApprovalInput{CallID: "c1", Decision: agent.DecisionDeny})
	if !errors.Is(err, agent.ErrConflict) || !strings.Contains(err.Error(), "by ann at ") {
		t.Fatalf("late approve: %v, want conflict naming ann and when", err)
	}
	err = g.app.Inbox.Answer(ann, it.ID, agent.InboxAnswer{Decision: agent.DecisionDeny})
	if !errors.Is(err, agent.ErrConflict) || !strings.Contains(err.Error(), "by ann at ") {
		t.Fatalf("late inbox answer: %v, want conflict naming ann and when", err)
	}
}

// TestInboxFirstAnswerWins: the inbox and the conversation's own approve
// answer the same call at once: exactly one decision is recorded, the
// other is a conflict.
func TestInboxFirstAnswerWins(t *testing.T) {
	t.Parallel()
	g, tools := approvalRig(t)
	withAnn(t, g)
	c, err := g.r.Create(ann, agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	if _, err := g.r.Start(ann, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	waitWaiting(t, g.r, c.ID, 1)
	id := agent.InboxID(agent.InboxApproval, c.ID, "c1")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = g.app.Inbox.Answer(ann, id, agent.InboxAnswer{Decision: agent.DecisionApprove})
	}()
	go func() {
		defer wg.Done()
		errs[1] = g.r.Approve(ann, c.ID, agent.ApprovalInput{CallID: "c1", Decision: agent.DecisionDeny})
	}()
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("answers %v, %v: want exactly one to win", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, agent.ErrConflict) {
			t.Fatalf("the losing answer: %v, want conflict", err)
		}
	}
	waitIdle(t, g.r, c.ID)
	res := inboxOf(t, g, ann, agent.InboxResolved)
	want := agent.DecisionApprove
	if errs[0] != nil {
		want = agent.DecisionDeny
	}
	if len(res) != 1 || res[0].Detail.Decision != want {
		t.Fatalf("resolved %+v, want the one decision %s", res, want)
	}
	tools.mu.Lock()
	ran := len(tools.calls)
	tools.mu.Unlock()
	if want == agent.DecisionApprove && ran != 1 || want == agent.DecisionDeny && ran != 0 {
		t.Fatalf("the tool ran %d times for a %s", ran, want)
	}
}

// TestInboxElicitation: a tool's request for input is an item of the
// owner's inbox, answered there with the form's content.
func TestInboxElicitation(t *testing.T) {
	t.Parallel()
	tools := &askTool{answered: make(chan struct{}), release: make(chan struct{})}
	close(tools.release)
	g := newRig(t, tools)
	withAnn(t, g)
	c, err := g.r.Create(ann, agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	g.onCommit = func(evs []agent.AllEvent) {
		for _, e := range evs {
			if e.Event != nil && e.Event.Type == agent.EventElicitationRequest {
				asked <- struct{}{}
			}
		}
	}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "a1", Name: "form__ask", Arguments: `{}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "Thanks, Ada."})
	if _, err := g.r.Start(ann, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("ask me")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked: // committed before Append returns: the rows are stored
	case <-time.After(testwait.Timeout):
		t.Fatal("the tool's request was never stored")
	}
	items := inboxOf(t, g, ann, agent.InboxPending)
	if len(items) != 1 || items[0].Kind != agent.InboxElicitation || items[0].CallID != "a1" || items[0].Title != "Your name?" || len(items[0].Detail.Schema) == 0 {
		t.Fatalf("ann's inbox %+v, want the tool's request", items)
	}
	if got := inboxOf(t, g, bob, agent.InboxPending); len(got) != 0 {
		t.Fatalf("bob's inbox %+v", got)
	}
	id := items[0].ID
	if err := g.app.Inbox.Answer(ann, id, agent.InboxAnswer{Decision: agent.DecisionApprove}); !errors.Is(err, agent.ErrBadRequest) {
		t.Fatalf("an approval's answer to an elicitation: %v, want bad_request", err)
	}
	if err := g.app.Inbox.Answer(bob, id, agent.InboxAnswer{Action: agent.ElicitDecline}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("bob answers: %v, want not_found", err)
	}
	if err := g.app.Inbox.Answer(ann, id, agent.InboxAnswer{Action: agent.ElicitAccept, Content: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, g.r, c.ID)
	res := inboxOf(t, g, ann, agent.InboxResolved)
	if len(res) != 1 || res[0].ID != id || res[0].ResolvedBy != "ann" || res[0].Detail.Action != agent.ElicitAccept {
		t.Fatalf("resolved %+v", res)
	}
	err = g.r.Elicit(ann, c.ID, agent.ElicitInput{RequestID: items[0].Detail.RequestID, Action: agent.ElicitDecline})
	if !errors.Is(err, agent.ErrConflict) || !strings.Contains(err.Error(), "by ann at ") {
		t.Fatalf("late elicit: %v, want conflict naming ann and when", err)
	}
}
