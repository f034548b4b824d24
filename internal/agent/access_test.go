package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/testwait"
)

var (
	ann = agent.WithPrincipal(context.Background(), agent.Principal{UserID: "ann", Role: agent.RoleMember})
	bob = agent.WithPrincipal(context.Background(), agent.Principal{UserID: "bob", Role: agent.RoleMember})
	adm = agent.WithPrincipal(context.Background(), agent.Principal{UserID: "boss", Role: agent.RoleAdmin})
)

// Every use case that names a conversation answers another member's with
// the not_found an unknown id gets; the owner and admins go on.
func TestAMemberCannotReachAnothersConversation(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	stored, err := g.r.Create(ann, agent.NewConversation{Title: "ann's"})
	if err != nil {
		t.Fatal(err)
	}
	temp, err := g.r.Create(ann, agent.NewConversation{Title: "ann's temp", Temp: true})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Owner != "ann" || temp.Owner != "ann" {
		t.Fatalf("owners %q %q, want ann", stored.Owner, temp.Owner)
	}
	_, unknown := g.r.Conversation(bob, "no-such-id")
	text := []agent.Content{agent.Text("hi")}
	for _, c := range []agent.Conversation{stored, temp} {
		id := c.ID
		calls := map[string]func(ctx context.Context) error{
			"conversation": func(ctx context.Context) error { _, err := g.r.Conversation(ctx, id); return err },
			"messages": func(ctx context.Context) error {
				_, err := g.r.Messages(ctx, agent.MessageQuery{ConversationID: id, Limit: 10})
				return err
			},
			"rename":    func(ctx context.Context) error { _, err := g.r.Rename(ctx, id, "x"); return err },
			"interrupt": func(ctx context.Context) error { _, err := g.r.Interrupt(ctx, id); return err },
			"send": func(ctx context.Context) error {
				_, err := g.r.Start(ctx, agent.StartInput{ConversationID: id, Content: text})
				return err
			},
			"queue_send": func(ctx context.Context) error {
				_, err := g.r.Start(ctx, agent.StartInput{ConversationID: id, Content: text, OnBusy: agent.OnBusyQueue})
				return err
			},
			"queue":         func(ctx context.Context) error { _, err := g.r.Queue(ctx, id, agent.QueueQuery{Limit: 10}); return err },
			"cancel_queued": func(ctx context.Context) error { return g.r.CancelQueued(ctx, id, "m") },
			"approve": func(ctx context.Context) error {
				return g.r.Approve(ctx, id, agent.ApprovalInput{CallID: "c", Decision: agent.DecisionDeny})
			},
			"compact": func(ctx context.Context) error { _, err := g.r.Compact(ctx, id); return err },
			"update": func(ctx context.Context) error {
				p := "x"
				_, err := g.r.UpdateConversation(ctx, id, agent.Settings{SystemPrompt: &p})
				return err
			},
			"switch_branch": func(ctx context.Context) error { _, err := g.r.SwitchBranch(ctx, id, "m"); return err },
			"regenerate":    func(ctx context.Context) error { _, err := g.r.Regenerate(ctx, id, ""); return err },
			"edit":          func(ctx context.Context) error { _, err := g.r.Edit(ctx, id, "m", text); return err },
			"completion": func(ctx context.Context) error {
				_, err := g.r.Start(ctx, agent.StartInput{ConversationID: id, Content: text})
				return err
			},
			"delete": func(ctx context.Context) error { return g.r.Delete(ctx, id) },
		}
		for name, call := range calls {
			err := call(bob)
			if agent.ErrorCode(err) != agent.CodeNotFound {
				t.Errorf("bob %s on ann's %s: %v, want not_found", name, id, err)
				continue
			}
			var got, want *agent.Error
			if !errors.As(err, &got) || !errors.As(unknown, &want) || strings.ReplaceAll(got.Message, id, "no-such-id") != want.Message {
				t.Errorf("bob %s: %q differs from an unknown id's %q", name, err, unknown)
			}
		}
		for _, ctx := range []context.Context{ann, adm} {
			if _, err := g.r.Conversation(ctx, id); err != nil {
				t.Errorf("%s: %v", agent.PrincipalFrom(ctx).UserID, err)
			}
		}
	}
	if _, err := g.r.Conversation(ann, stored.ID); err != nil {
		t.Fatalf("ann's conversation is gone after bob's delete: %v", err)
	}
}

// Lists, search and imports follow the owner.
func TestListsAndImportsFollowTheOwner(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	for _, ctx := range []context.Context{ann, ann, bob} {
		if _, err := g.r.Create(ctx, agent.NewConversation{Title: "apples"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.r.Create(ann, agent.NewConversation{Title: "temp apples", Temp: true}); err != nil {
		t.Fatal(err)
	}
	for ctx, want := range map[context.Context]int{ann: 3, bob: 1, adm: 4, context.Background(): 4} {
		cs, total, err := g.r.Conversations(ctx, 0, 100)
		if err != nil || total != want || len(cs) != want {
			t.Errorf("%s lists %d of %d (%v), want %d", agent.PrincipalFrom(ctx).UserID, len(cs), total, err, want)
		}
		for _, c := range cs {
			if s := agent.Scope(ctx); s != "" && c.Owner != s {
				t.Errorf("%s lists %s's %s", s, c.Owner, c.ID)
			}
		}
	}
	q, _ := agent.ParseSearch("apples", 0)
	if res, err := g.r.Search(bob, g.st, q); err != nil || len(res) != 1 {
		t.Errorf("bob's search: %v, %v", res, err)
	}

	in := []agent.ImportConversation{{Source: "chatgpt:1", Title: "imported", Messages: []agent.Message{{Type: agent.MessageUser, Content: []agent.Content{agent.Text("hi")}}}}}
	a, err := g.r.Import(ann, in)
	if err != nil || len(a.Conversations) != 1 || a.Conversations[0].Owner != "ann" {
		t.Fatalf("ann's import: %+v, %v", a, err)
	}
	b, err := g.r.Import(bob, in)
	if err != nil || len(b.Conversations) != 1 || len(b.Existing) != 0 || b.Conversations[0].Owner != "bob" {
		t.Fatalf("bob's import of the same source: %+v, %v (want a copy of his own)", b, err)
	}
	again, err := g.r.Import(ann, in)
	if err != nil || len(again.Existing) != 1 || again.Existing[0] != a.Conversations[0].ID {
		t.Fatalf("ann's second import: %+v, %v", again, err)
	}
}

// A member's all and agent streams carry only their conversations'
// events, live and on replay, temp ones included; an admin's carry all.
func TestAMembersStreamsCarryOnlyTheirs(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	g.people() // their turns run: they stand (standing.go)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	subs := map[string]*broker.Sub{}
	for name, pctx := range map[string]context.Context{"ann": ann, "bob": bob, "boss": adm} {
		sub, err := g.b.Subscribe(pctx, broker.Stream{Kind: broker.StreamAll}, -1, "")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs[name] = sub
	}
	mine := map[string][]string{}
	for _, p := range []struct {
		ctx  context.Context
		temp bool
	}{{ann, false}, {bob, false}, {ann, true}} {
		c, err := g.r.Create(p.ctx, agent.NewConversation{Temp: p.temp})
		if err != nil {
			t.Fatal(err)
		}
		name := agent.PrincipalFrom(p.ctx).UserID
		mine[name] = append(mine[name], c.ID)
		sub, err := g.b.Subscribe(p.ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.r.Start(p.ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
			t.Fatal(err)
		}
		untilEnd(t, ctx, sub)
		sub.Close()
	}
	// The last turn's end, seen by everyone allowed: what came before it
	// is in each stream already.
	last := mine["ann"][1]
	seen := func(sub *broker.Sub, until string) map[string]int {
		got := map[string]int{}
		for {
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if it.CaughtUp {
				continue
			}
			got[it.Event.ConversationID]++
			if it.Event.ConversationID == until && it.Event.Type == agent.AgentTurnEnded {
				return got
			}
		}
	}
	check := func(who string, got map[string]int, want []string) {
		t.Helper()
		ids := make([]string, 0, len(got))
		for id := range got {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		want = slices.Clone(want)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("%s saw the events of %v, want %v", who, ids, want)
		}
	}
	check("ann live", seen(subs["ann"], last), mine["ann"])
	check("boss live", seen(subs["boss"], last), append(append([]string{}, mine["ann"]...), mine["bob"]...))
	// Everything is published by now: bob's queue holds all he gets.
	bobs := map[string]int{}
	for {
		it, ok, err := subs["bob"].TryNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		bobs[it.Event.ConversationID]++
	}
	check("bob live", bobs, mine["bob"])

	// Replay from the start: the stored conversations only (temp events
	// are never stored), each member's own.
	for name, pctx := range map[string]context.Context{"ann": ann, "bob": bob} {
		sub, err := g.b.Subscribe(pctx, broker.Stream{Kind: broker.StreamAll}, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for {
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if it.CaughtUp {
				break
			}
			got[it.Event.ConversationID]++
		}
		sub.Close()
		check(name+" replay", got, mine[name][:1])
	}
}

// people makes the accounts of ann, bob and boss, whose turns run only
// while they stand (agent/standing.go).
func (g *rig) people() {
	g.t.Helper()
	for _, ctx := range []context.Context{ann, bob, adm} {
		p := agent.PrincipalFrom(ctx)
		if err := g.st.CreateUser(context.Background(), agent.User{ID: p.UserID, Name: p.UserID, Role: p.Role, CreatedAt: time.Now()}); err != nil {
			g.t.Fatal(err)
		}
	}
}
