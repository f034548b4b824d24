package agent_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// failingStore fails the Append that writes the first streamed text, as a
// full disk would, then writes again.
type failingStore struct {
	agent.Store
	failed atomic.Bool
}

func (s *failingStore) Append(ctx context.Context, recs ...*agent.Record) error {
	for _, r := range recs {
		if e := r.Event.Event; e != nil && e.Type == agent.EventAppendText && s.failed.CompareAndSwap(false, true) {
			return errors.New("disk I/O error: INSERT INTO events: /var/secret/agentik.db-wal")
		}
	}
	return s.Store.Append(ctx, recs...)
}

// syncBuffer is a log sink safe for the turn goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestWriteFailureIsInternalError checks that a failed write mid-turn ends
// the turn with an internal error whose message names no SQL or path (the
// detail goes to the log), never as an interrupt.
func TestWriteFailureIsInternalError(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	m, err := llm.New(llm.Config{BaseURL: g.url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	st := &failingStore{Store: g.st}
	r := agent.NewRunner(agent.Config{Store: st, Cluster: g.st, Publisher: g.b, Model: m, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	defer r.Close(context.Background())
	c, err := r.Create(context.Background(), agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	g.fake.Enqueue(llmtest.Reply{Text: "one two three"})
	if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	evs := untilEnd(t, ctx, sub)
	got := types(evs)
	if strings.Contains(got, "interrupted") || !strings.HasSuffix(got, "message:error error end") {
		t.Fatalf("events %s, want an error and no interrupt", got)
	}
	e := evs[len(evs)-2]
	if e.Code != agent.CodeInternal || strings.Contains(e.Error, "INSERT") || strings.Contains(e.Error, "/var/secret") {
		t.Fatalf("error %q (%s): want code internal and no detail", e.Error, e.Code)
	}
	if !strings.Contains(logs.String(), "/var/secret/agentik.db-wal") {
		t.Fatalf("the detail is not in the log:\n%s", logs)
	}
}

// TestStreamCutKeepsPartialAnswer checks that the text a model sent before
// its stream broke is stored, marked interrupted, before the error, so a
// reload shows it.
func TestStreamCutKeepsPartialAnswer(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: "one two three four five", CutAfter: 2})
	evs := g.turn(c, "hi")
	if got := types(evs); !strings.HasSuffix(got, "message:assistant_message message:error error end") {
		t.Fatalf("events %s", got)
	}
	g.close()
	g.open()
	ms, err := g.cs.Messages(context.Background(), agent.MessageQuery{ConversationID: c.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range ms {
		kinds = append(kinds, m.Type)
	}
	if len(ms) != 3 || ms[1].Type != agent.MessageAssistant || !ms[1].Interrupted || len(ms[1].Content) == 0 || ms[1].Content[0].Body == "" {
		t.Fatalf("after reload: %v %+v", kinds, ms)
	}
	if !strings.HasPrefix("one two three four five", ms[1].Content[0].Body) {
		t.Fatalf("kept %q", ms[1].Content[0].Body)
	}
}

// TestShutdownWithSendInFlight checks that Close drains: a send once
// Close has begun gets unavailable and starts nothing, and a running turn
// finishes within Config.DrainTimeout.
func TestShutdownWithSendInFlight(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.DrainTimeout = time.Hour })
	c := g.create(false)
	other := g.create(false)
	hold := make(chan struct{})
	g.fake.Enqueue(llmtest.Reply{Text: "finished", Hold: hold})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	// The fake hands out replies in the order requests reach it: the held
	// one must be c's before any turn of other asks, or other's turn holds
	// it and never drains (a fresh-clone run waited a minute on that).
	testwait.For(t, "c's turn taking the held reply", func() bool { return g.fake.Pending() == 0 })
	closed := make(chan error, 1)
	go func() { closed <- g.r.Close(ctx) }()
	var sendErr error
	for sendErr == nil {
		// Until Close has begun, a send to another conversation starts a
		// turn (which the drain lets finish); after, it is refused.
		g.fake.Enqueue(llmtest.Reply{Text: "x"})
		_, sendErr = g.r.Start(ctx, agent.StartInput{ConversationID: other.ID, Content: []agent.Content{agent.Text("more")}})
		if agent.ErrorCode(sendErr) == agent.CodeBusy {
			waitDrained(t, g.r, other.ID)
			sendErr = nil
		}
	}
	if agent.ErrorCode(sendErr) != agent.CodeUnavailable || !strings.Contains(sendErr.Error(), "again in a few seconds") {
		t.Fatalf("send during shutdown: %v, want unavailable with a retry hint", sendErr)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a turn was still running", err)
	default:
	}
	close(hold)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := types(untilEnd(t, ctx, sub)); got != "message:user_message start_response append_text message:assistant_message end" {
		t.Fatalf("events %s", got)
	}
	if conv, _ := g.st.Conversation(ctx, other.ID); conv.Running {
		t.Fatal("a turn started during shutdown is still running")
	}
}

// TestAnswerCap checks that an answer past the configured cap ends the
// turn with a clear error, keeping the text that came before it.
func TestAnswerCap(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	m, err := llm.New(llm.Config{BaseURL: g.url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	r := agent.NewRunner(agent.Config{Store: g.st, Cluster: g.st, Publisher: g.b, Model: m, MaxAnswerBytes: 12})
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
	g.fake.Enqueue(llmtest.Reply{Text: "one two three four five six seven"})
	if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	evs := untilEnd(t, ctx, sub)
	if got := types(evs); !strings.HasSuffix(got, "message:assistant_message message:error error end") {
		t.Fatalf("events %s", got)
	}
	if e := evs[len(evs)-2]; e.Code != agent.CodeModelError || !strings.Contains(e.Error, "12 bytes") {
		t.Fatalf("error %q (%s)", e.Error, e.Code)
	}
	cs, _, _ := agent.ServicesOf(r)
	ms, err := cs.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	kept := ms[1].Content[0].Body
	if ms[1].Type != agent.MessageAssistant || !ms[1].Interrupted || kept == "" || len(kept) > 12 || !strings.HasPrefix("one two three four five six seven", kept) {
		t.Fatalf("kept %+v", ms[1])
	}
	if text(evs) != kept {
		t.Fatalf("streamed %q, kept %q", text(evs), kept)
	}
}

// TestConcurrentSendsOneClientID checks that many sends of one message
// (one client_id) at once start one turn and answer duplicate, never busy.
func TestConcurrentSendsOneClientID(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	for _, temp := range []bool{false, true} {
		c := g.create(temp)
		g.fake.Enqueue(llmtest.Reply{Text: "once"})
		const n = 16
		res := make([]agent.SendResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res[i], errs[i] = g.r.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}, ClientID: "same"})
			}()
		}
		close(start)
		wg.Wait()
		firsts := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("temp %v: send %d: %v", temp, i, errs[i])
			}
			if !res[i].Duplicate {
				firsts++
			}
			if res[i].MessageID != res[0].MessageID {
				t.Fatalf("temp %v: message ids %s and %s", temp, res[i].MessageID, res[0].MessageID)
			}
		}
		if firsts != 1 {
			t.Fatalf("temp %v: %d sends started a turn, want 1", temp, firsts)
		}
		if _, err := g.r.Interrupt(context.Background(), c.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestToolArgumentsCountTowardAnswerCap: a tool call whose arguments pass
// the answer cap ends the turn with the cap's error; the call is neither
// stored nor run.
func TestToolArgumentsCountTowardAnswerCap(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	m, err := llm.New(llm.Config{BaseURL: g.url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	tools := &fakeTools{}
	r := agent.NewRunner(agent.Config{Store: g.st, Cluster: g.st, Publisher: g.b, Model: m, Tools: tools, MaxAnswerBytes: 1000})
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
	big := `{"x":"` + strings.Repeat("a", 5000) + `"}`
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "k", Name: "calc__add", Arguments: big}}, SplitArgs: true})
	if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	evs := untilEnd(t, ctx, sub)
	if e := evs[len(evs)-2]; e.Type != agent.EventError || e.Code != agent.CodeModelError || !strings.Contains(e.Error, "1000 bytes") {
		t.Fatalf("events %s, last error %q", types(evs), e.Error)
	}
	if strings.Contains(types(evs), "tool_call") || len(tools.calls) != 0 {
		t.Fatalf("the oversized call was kept or run: %s, %v", types(evs), tools.calls)
	}
}
