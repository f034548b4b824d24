package store

import (
	"context"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestInboxItems: on both databases, an owner's waiting call is theirs
// alone, pending until decided, then resolved by its decider.
func TestInboxItems(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := open(t, b.dsn(t), Options{})
			ctx := context.Background()
			now := time.Now().UTC()
			ev := func(e agent.Event) agent.AllEvent {
				return agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: now, ConversationID: "c1", Event: &e}
			}
			created := &agent.Record{Event: agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: now, ConversationID: "c1", Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: "c1"}},
				Conversation: &agent.Conversation{ID: "c1", Title: "nightly", Owner: "ann", CreatedAt: now, UpdatedAt: now}}
			ask := &agent.Record{Event: ev(agent.Event{Type: agent.EventApprovalRequest, CallID: "k1", Name: "calc__add", Arguments: "{}"}),
				Wait: []agent.PendingCall{{CallID: "k1", Name: "calc__add", Arguments: "{}", Needs: true, Requested: now}}}
			if err := s.Append(ctx, created, ask); err != nil {
				t.Fatal(err)
			}
			items := func(owner string, pending bool) []agent.InboxItem {
				t.Helper()
				got, err := s.InboxItems(ctx, owner, pending)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			if got := items("ann", true); len(got) != 1 || got[0].CallID != "k1" || got[0].Detail.Conversation != "nightly" {
				t.Fatalf("ann's pending %+v", got)
			}
			if got := items("bob", true); len(got) != 0 {
				t.Fatalf("bob's pending %+v", got)
			}
			dec := &agent.Record{Event: ev(agent.Event{Type: agent.EventApproval, CallID: "k1", Decision: agent.DecisionDeny}),
				Decide: &agent.Decision{CallID: "k1", By: "ann", Reason: "no"}}
			if err := s.Append(ctx, dec); err != nil {
				t.Fatal(err)
			}
			if got := items("ann", true); len(got) != 0 {
				t.Fatalf("ann's pending after the decision %+v", got)
			}
			got := items("ann", false)
			if len(got) != 1 || got[0].ResolvedBy != "ann" || got[0].ResolvedAt == nil || got[0].Detail.Decision != agent.DecisionDeny || got[0].Detail.Reason != "no" {
				t.Fatalf("ann's resolved %+v", got)
			}
		})
	}
}
