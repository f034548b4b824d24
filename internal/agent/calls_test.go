package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// resultFailStore fails, once, the Append that writes a tool result, as a
// database that drops one write would.
type resultFailStore struct {
	agent.Store
	failed atomic.Bool
}

func (s *resultFailStore) Append(ctx context.Context, recs ...*agent.Record) error {
	for _, r := range recs {
		if e := r.Event.Event; e != nil && e.Type == agent.EventMessage && e.Message.Type == agent.MessageToolResult && !e.Message.IsError && s.failed.CompareAndSwap(false, true) {
			return errors.New("database is locked")
		}
	}
	return s.Store.Append(ctx, recs...)
}

// answered returns the tool results of hist by call id.
func answered(hist []agent.Message) map[string]agent.Message {
	out := map[string]agent.Message{}
	for _, m := range hist {
		if m.Type == agent.MessageToolResult {
			out[m.CallID] = m
		}
	}
	return out
}

// TestFailedWriteMidRoundAnswersCalls: a write that fails while a round's
// two tool calls run ends the turn with both calls answered (is_error) in
// history and memory, so the next turn's history passes a strict model.
func TestFailedWriteMidRoundAnswersCalls(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, nil, llmtest.WithStrictToolPairs())
	m, err := llm.New(llm.Config{BaseURL: g.url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	st := &resultFailStore{Store: g.st}
	r := agent.NewRunner(agent.Config{Store: st, Cluster: g.st, Publisher: g.b, Model: m, Tools: &fakeTools{}})
	defer r.Close(context.Background())
	c, err := r.Create(context.Background(), agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(text string) []agent.Event {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text(text)}}); err != nil {
			t.Fatal(err)
		}
		return untilEnd(t, ctx, sub)
	}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "calc__add", Arguments: `{}`}, {ID: "s2", Name: "calc__add", Arguments: `{}`}}})
	if got := types(turn("add twice")); !strings.HasSuffix(got, "message:error error end") {
		t.Fatalf("events %s, want the turn to fail", got)
	}
	res := answered(g.history(c))
	for _, id := range []string{"s1", "s2"} {
		if m := res[id]; !m.IsError || m.Result == "" {
			t.Errorf("result of %s: %+v, want is_error saying why", id, m)
		}
	}
	if got := text(turn("again")); got != "You said: again" {
		t.Fatalf("the next turn answered %q (a strict model refuses unanswered calls)", got)
	}
}

// TestClientCallNobodyAnswers: a client-side call the client never
// answers (it sends a new message instead, or answers only some calls)
// gets an is_error result, and the model sees a paired history.
func TestClientCallNobodyAnswers(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, nil, llmtest.WithStrictToolPairs())
	c := g.create(false)
	client := []agent.ToolSpec{{Name: "get_time", Parameters: []byte(`{"type":"object"}`)}, {Name: "get_date", Parameters: []byte(`{"type":"object"}`)}}
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "get_time", Arguments: `{}`}}})
	g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("what time")}, ClientTools: client})
	if got := text(g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("never mind")}})); got != "You said: never mind" {
		t.Fatalf("a new message after an unanswered client call got %q", got)
	}
	if m := answered(g.history(c))["c1"]; !m.IsError || m.Result == "" {
		t.Fatalf("result of c1: %+v, want is_error saying why", m)
	}

	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c2", Name: "get_time", Arguments: `{}`}, {ID: "c3", Name: "get_date", Arguments: `{}`}}})
	g.completionTurn(c.ID, agent.StartInput{Content: []agent.Content{agent.Text("time and date")}, ClientTools: client})
	g.fake.Enqueue(llmtest.Reply{Text: "noon, some day"})
	evs := g.completionTurn(c.ID, agent.StartInput{Results: []agent.ToolResult{{CallID: "c2", Result: "noon"}}, ClientTools: client})
	if got := text(evs); got != "noon, some day" {
		t.Fatalf("results for one of two calls: %q, %s", got, types(evs))
	}
	if m := answered(g.history(c))["c3"]; !m.IsError {
		t.Fatalf("result of c3: %+v, want is_error", m)
	}
}
