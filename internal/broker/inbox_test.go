package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// TestInboxStream: a user's inbox stream holds the approval events of
// their own conversations only, live and replayed alike; an admin's holds
// their own, not everyone's.
func TestInboxStream(t *testing.T) {
	st, b := rig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	as := func(id, role string) context.Context {
		return agent.WithPrincipal(ctx, agent.Principal{UserID: id, Role: role})
	}
	owned := func(id, owner string) *agent.Record {
		r := created(id)
		r.Conversation.Owner = owner
		return r
	}
	ask := func(conv string) *agent.Record {
		return &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: conv,
			Event: &agent.Event{Type: agent.EventApprovalRequest, CallID: "c-" + conv, Name: "calc__add", Arguments: "{}"}}}
	}
	ann, err := b.Subscribe(as("ann", agent.RoleMember), broker.Stream{Kind: broker.StreamInbox}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	admin, err := b.Subscribe(as("root", agent.RoleAdmin), broker.Stream{Kind: broker.StreamInbox}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := st.Append(ctx, owned("a1", "ann"), owned("b1", "bob"), owned("r1", "root"), text("a1", "ann's"), ask("b1"), ask("a1"), ask("r1")); err != nil {
		t.Fatal(err)
	}
	next := func(s *broker.Sub) string {
		t.Helper()
		for {
			it, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if it.Event != nil {
				return it.Event.ConversationID + "/" + it.Event.Type
			}
		}
	}
	if got := next(ann); got != "a1/approval_request" {
		t.Errorf("ann's inbox stream: %s first, want a1/approval_request", got)
	}
	if got := next(admin); got != "r1/approval_request" {
		t.Errorf("the admin's inbox stream: %s first, want r1/approval_request (their own)", got)
	}
	replay, err := b.Subscribe(as("ann", agent.RoleMember), broker.Stream{Kind: broker.StreamInbox}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	if got := next(replay); got != "a1/approval_request" {
		t.Errorf("ann's inbox replay: %s first, want a1/approval_request", got)
	}
}
