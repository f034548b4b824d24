package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// waitDrained waits until the conversation runs no turn and has nothing
// queued.
func waitDrained(t *testing.T, r *agent.Runner, id string) {
	t.Helper()
	await(t, r, id, "the queue to drain", func(c agent.Conversation) bool { return !c.Running && c.Queued == 0 })
}

// users is the text of the history's user messages, in order.
func users(ms []agent.Message) []string {
	var out []string
	for _, m := range ms {
		if m.Type == agent.MessageUser {
			out = append(out, m.Content[0].Body)
		}
	}
	return out
}

func TestQueuedSendsRunInOrder(t *testing.T) {
	t.Parallel()
	for _, temp := range []bool{false, true} {
		t.Run(map[bool]string{false: "stored", true: "temp"}[temp], func(t *testing.T) {
			g := newRig(t, nil)
			c := g.create(temp)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
			defer cancel()
			hold := make(chan struct{})
			g.fake.Enqueue(llmtest.Reply{Text: "first answer", Hold: hold})
			for _, s := range []string{"a1", "a2", "a3"} {
				g.fake.Enqueue(llmtest.Reply{Text: s})
			}
			sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("zero")}, OnBusy: agent.OnBusyQueue}); err != nil {
				t.Fatal(err)
			}
			if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("x")}, OnBusy: "later"}); !errors.Is(err, agent.ErrBadRequest) {
				t.Fatalf("unknown on_busy: %v, want bad_request", err)
			}
			var ids []string
			for i, s := range []string{"one", "two", "three"} {
				res, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text(s)}, ClientID: "k" + s, OnBusy: agent.OnBusyQueue})
				if err != nil || !res.Queued || res.Position != i+1 {
					t.Fatalf("queue %s: %+v, %v", s, res, err)
				}
				ids = append(ids, res.MessageID)
			}
			again, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("two")}, ClientID: "ktwo", OnBusy: agent.OnBusyQueue})
			if err != nil || !again.Duplicate || again.MessageID != ids[1] {
				t.Fatalf("queue again with the same client_id: %+v, %v", again, err)
			}
			if got, _ := g.r.Conversation(ctx, c.ID); got.Queued != 3 || !got.Running {
				t.Fatalf("conversation %+v, want running with 3 queued", got)
			}
			if err := g.r.CancelQueued(ctx, c.ID, ids[1]); err != nil {
				t.Fatal(err)
			}
			if err := g.r.CancelQueued(ctx, c.ID, ids[1]); !errors.Is(err, agent.ErrNotFound) {
				t.Fatalf("cancel twice: %v, want not_found", err)
			}
			close(hold)
			waitDrained(t, g.r, c.ID)
			hist := g.history(c)
			if got, want := strings.Join(users(hist), " "), "zero one three"; got != want {
				t.Fatalf("user messages %q, want %q", got, want)
			}
			var answers []string
			for _, m := range hist {
				if m.Type == agent.MessageAssistant {
					answers = append(answers, m.Content[0].Body)
				}
			}
			if got := strings.Join(answers, "|"); got != "first answer|a1|a2" {
				t.Errorf("answers %q", got)
			}
			if hist[2].ID != ids[0] || hist[2].ClientID != "kone" {
				t.Errorf("started message %+v, want id %s with its client_id", hist[2], ids[0])
			}
			if err := g.r.CancelQueued(ctx, c.ID, ids[0]); !errors.Is(err, agent.ErrConflict) {
				t.Fatalf("cancel of a started send: %v, want conflict", err)
			}
			// The stream showed each queued send, its cancel, then each
			// start as its user message.
			var got []string
			for len(got) < 10 {
				it, err := sub.Next(ctx)
				if err != nil {
					t.Fatalf("after %q: %v", got, err)
				}
				if it.CaughtUp {
					continue
				}
				all, err := it.Event.Decode()
				if err != nil || all.Event == nil {
					continue
				}
				switch e := all.Event; e.Type {
				case agent.EventQueued:
					got = append(got, "queued:"+e.Content[0].Body)
				case agent.EventQueueCancelled:
					got = append(got, "cancelled")
				case agent.EventMessage:
					if e.Message.Type == agent.MessageUser {
						got = append(got, "user:"+e.Message.Content[0].Body)
					}
				case agent.EventEnd:
					got = append(got, "end")
				}
			}
			if s, want := strings.Join(got, " "), "user:zero queued:one queued:two queued:three cancelled end user:one end user:three end"; s != want {
				t.Fatalf("stream\n got %s\nwant %s", s, want)
			}
		})
	}
}

func TestOnBusyInterruptKeepsPartialAnswer(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: strings.Repeat("word ", 400), Delay: 5 * time.Millisecond})
	g.fake.Enqueue(llmtest.Reply{Text: "fresh"})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("talk")}}); err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	for len(text(evs)) < 20 {
		it, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, err := it.Event.Decode()
		if err != nil || all.Event == nil {
			t.Fatalf("event %s: %v", it.Event.JSON, err)
		}
		evs = append(evs, *all.Event)
	}
	res, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("stop, do this")}, OnBusy: agent.OnBusyInterrupt})
	if err != nil || !res.Queued || res.Position != 1 {
		t.Fatalf("send with on_busy interrupt: %+v, %v", res, err)
	}
	waitDrained(t, g.r, c.ID)
	hist := g.history(c)
	if len(hist) != 4 {
		t.Fatalf("history %+v", hist)
	}
	if hist[1].Type != agent.MessageAssistant || !hist[1].Interrupted || !strings.HasPrefix(hist[1].Content[0].Body, "word word") {
		t.Errorf("partial answer %+v", hist[1])
	}
	if hist[2].ID != res.MessageID || hist[2].Content[0].Body != "stop, do this" || hist[3].Content[0].Body != "fresh" {
		t.Errorf("the new message and its answer: %+v %+v", hist[2], hist[3])
	}
}

// TestQueuedSendSurvivesRestart: a send queued behind a turn that the
// shutdown stops runs once the server is back, after the continued turn.
func TestQueuedSendSurvivesRestart(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	ctx := context.Background()
	hold := make(chan struct{})
	defer close(hold)
	g.fake.Enqueue(llmtest.Reply{Text: "never", Hold: hold})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("first")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("later")}, OnBusy: agent.OnBusyQueue}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the held reply taken", func() bool { return g.fake.Pending() == 0 }) // it is being streamed
	g.close()
	g.fake.Enqueue(llmtest.Reply{Text: "the first, continued"})
	g.fake.Enqueue(llmtest.Reply{Text: "after the restart"})
	g.open()
	waitDrained(t, g.r, c.ID)
	hist := g.history(c)
	if got := strings.Join(users(hist), " "); got != "first later" {
		t.Fatalf("user messages %q", got)
	}
	if last := hist[len(hist)-1]; last.Type != agent.MessageAssistant || last.Content[0].Body != "after the restart" {
		t.Fatalf("last message %+v", last)
	}
}

// queueSpy is a store that records the queue reads made of it.
type queueSpy struct {
	agent.Store
	mu    sync.Mutex
	reads []agent.QueueQuery
}

func (s *queueSpy) Queue(ctx context.Context, q agent.QueueQuery) ([]agent.QueuedSend, error) {
	s.mu.Lock()
	s.reads = append(s.reads, q)
	s.mu.Unlock()
	return s.Store.Queue(ctx, q)
}

// TestQueueStartReadsOnlyTheHead: draining a queue starts each send
// reading the queue's head (one row), and a duplicate client_id is looked
// up by that id, never by reading the whole queue.
func TestQueueStartReadsOnlyTheHead(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	m, err := llm.New(llm.Config{BaseURL: g.url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	st := &queueSpy{Store: g.st}
	r := agent.NewRunner(agent.Config{Store: st, Cluster: g.st, Publisher: g.b, Model: m})
	defer r.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	c, err := r.Create(ctx, agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	hold := make(chan struct{})
	g.fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("first")}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text(fmt.Sprintf("q%d", i))}, ClientID: fmt.Sprintf("k%d", i), OnBusy: agent.OnBusyQueue}); err != nil {
			t.Fatal(err)
		}
	}
	dup, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("again")}, ClientID: "k3", OnBusy: agent.OnBusyQueue})
	if err != nil || !dup.Duplicate || dup.Position != 4 {
		t.Fatalf("resend of k3: %+v, %v; want the duplicate at position 4", dup, err)
	}
	close(hold)
	for range 6 {
		untilEnd(t, ctx, sub)
	}
	ms, err := r.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(users(ms), " "); got != "first q0 q1 q2 q3 q4" {
		t.Fatalf("history %s", got)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.reads) < 5 {
		t.Fatalf("%d queue reads, want one per start at least", len(st.reads))
	}
	for _, q := range st.reads {
		if q.Limit != 1 || q.Offset != 0 {
			t.Errorf("queue read %+v: the runner reads one send at a time", q)
		}
	}
}
