package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestRecoverInterruptedByRestart: with continuations off, a dead turn
// ends with interrupted_by_restart, as before them.
func TestRecoverInterruptedByRestart(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Continuations = -1 })
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
	if conv, _ := g.cs.Get(ctx, c.ID); conv.Running {
		t.Error("still running after recovery")
	}
}

// TestStaleTurnIsBusyUntilRecovered: a conversation the store marks
// running without a turn in this runner (another instance's turn, or one of
// ours whose last write failed) is busy; recovery ends it when no live
// process runs it, and the conversation works again.
func TestStaleTurnIsBusyUntilRecovered(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Continuations = -1 })
	c := g.create(false)
	ctx := context.Background()
	g.startTurnInStore(c)
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("again")}}); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("send: %v, want busy", err)
	}
	if err := g.r.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if conv, _ := g.cs.Get(ctx, c.ID); conv.Running {
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
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
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

// appendEvents writes events of conversation c as a turn streaming them
// would, and returns the last one's seq.
func (g *rig) appendEvents(c agent.Conversation, evs ...agent.Event) int64 {
	g.t.Helper()
	var recs []*agent.Record
	for _, e := range evs {
		recs = append(recs, &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: c.ID, Event: &e}})
	}
	if err := g.st.Append(context.Background(), recs...); err != nil {
		g.t.Fatal(err)
	}
	return recs[len(recs)-1].Event.Seq
}

// after subscribes to c's events after seq (they are replayed first).
func (g *rig) after(c agent.Conversation, seq int64) (*broker.Sub, context.Context) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	g.t.Cleanup(cancel)
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, seq, "")
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(sub.Close)
	return sub, ctx
}

// TestRecoverContinuesCutAnswer: a turn whose process died mid-answer is
// continued at the next start: the model is asked again with the history
// and the kept answer (an assistant prefix the server continues, or an
// instruction to go on), its new text joins the kept text in one answer,
// and the turn ends completed, its events after the kept ones.
func TestRecoverContinuesCutAnswer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{llm.ContinueInstruction, llm.ContinuePrefix} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			g := newRigWith(t, nil, func(c *agent.Config, m llm.Config) {
				m.Continue = mode
				model, err := llm.New(m)
				if err != nil {
					t.Fatal(err)
				}
				c.Model = model
			})
			c := g.create(false)
			g.startTurnWithMemory(c)
			seq := g.appendEvents(c, agent.Event{Type: agent.EventStartResponse}, agent.Event{Type: agent.EventAppendText, Text: "The answer is"}, agent.Event{Type: agent.EventAppendText, Text: " forty"})
			g.fake.Enqueue(llmtest.Reply{Text: "-two."})
			g.close()
			g.open()
			sub, ctx := g.after(c, seq)
			evs := untilEnd(t, ctx, sub)
			if got := types(evs); got != "continued append_text message:assistant_message end" {
				t.Fatalf("the continued turn's events: %s", got)
			}
			if evs[0].Attempt != 1 {
				t.Errorf("continued attempt %d, want 1", evs[0].Attempt)
			}
			hist := g.history(c)
			last := hist[len(hist)-1]
			if last.Type != agent.MessageAssistant || last.Interrupted || len(last.Content) != 1 || last.Content[0].Body != "The answer is forty-two." {
				t.Fatalf("the answer after the continuation: %+v", last)
			}
			reqs := g.fake.Requests()
			req := reqs[len(reqs)-1]
			n := len(req.Messages)
			switch mode {
			case llm.ContinuePrefix:
				if m := req.Messages[n-1]; m.Role != "assistant" || m.Content != "The answer is forty" || !req.ContinueFinalMessage || req.AddGenerationPrompt == nil || *req.AddGenerationPrompt {
					t.Fatalf("the continuation request ends with %+v (continue_final_message %v, add_generation_prompt %v)", m, req.ContinueFinalMessage, req.AddGenerationPrompt)
				}
			default:
				if m := req.Messages[n-2]; m.Role != "assistant" || m.Content != "The answer is forty" {
					t.Fatalf("the kept answer is not before the instruction: %+v", req.Messages)
				}
				if m := req.Messages[n-1]; m.Role != "user" || !strings.Contains(m.Content, "without repeating") || req.ContinueFinalMessage {
					t.Fatalf("the continuation request ends with %+v", m)
				}
			}
			if m := req.Messages[n-3+btoi(mode == llm.ContinuePrefix)]; m.Role != "user" || m.Content != "hi" {
				t.Fatalf("the history before the kept answer: %+v", req.Messages)
			}
			if conv, _ := g.cs.Get(ctx, c.ID); conv.Running {
				t.Fatal("still running after the continued turn ended")
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// blockTool is one tool whose calls run until their context ends.
type blockTool struct {
	calls   atomic.Int32
	started chan struct{}
}

func (b *blockTool) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "slow__wait", Parameters: []byte(`{"type":"object"}`)}}
}

func (b *blockTool) Call(ctx context.Context, _, _ string) (string, error) {
	if b.calls.Add(1) == 1 {
		close(b.started)
	}
	<-ctx.Done()
	return "", ctx.Err()
}

// TestRecoverDoesNotRerunToolCall: a tool call running when the server
// stopped (left to be continued) is not run again after the start: its
// result is an error saying so, and the model decides what to do.
func TestRecoverDoesNotRerunToolCall(t *testing.T) {
	t.Parallel()
	tool := &blockTool{started: make(chan struct{})}
	g := newRig(t, tool)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "slow__wait", Arguments: `{}`}}})
	if _, err := g.r.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("wait")}}); err != nil {
		t.Fatal(err)
	}
	<-tool.started
	g.close()
	g.fake.Enqueue(llmtest.Reply{Text: "I will not wait again."})
	g.open()
	sub, ctx := g.after(c, 0)
	evs := untilEnd(t, ctx, sub)
	if got := types(evs); !strings.HasSuffix(got, "continued message:tool_result start_response append_text message:assistant_message end") {
		t.Fatalf("events %s", got)
	}
	if n := tool.calls.Load(); n != 1 {
		t.Fatalf("the tool was called %d times, want once", n)
	}
	reqs := g.fake.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; m.Role != "tool" || m.ToolCallID != "c1" || !strings.Contains(m.Content, "interrupted by a restart") {
		t.Fatalf("the model is not told the call was interrupted: %+v", m)
	}
	hist := g.history(c)
	if m := hist[len(hist)-1]; m.Type != agent.MessageAssistant || m.Interrupted || m.Content[0].Body != "I will not wait again." {
		t.Fatalf("last message %+v", m)
	}
}

// TestRecoverBoundsContinuations: a turn continued as often as
// Config.Continuations allows (a crash loop) ends as before them, its
// kept answer marked interrupted before an interrupted_by_restart error.
func TestRecoverBoundsContinuations(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Continuations = 2 })
	c := g.create(false)
	g.startTurnInStore(c)
	g.appendEvents(c, agent.Event{Type: agent.EventContinued, Attempt: 1}, agent.Event{Type: agent.EventStartResponse}, agent.Event{Type: agent.EventAppendText, Text: "so far"},
		agent.Event{Type: agent.EventContinued, Attempt: 2})
	g.close()
	g.open()
	hist := g.history(c)
	n := len(hist)
	if hist[n-1].Code != agent.CodeInterruptedByRestart || !strings.Contains(hist[n-1].Error, "3 times") {
		t.Fatalf("last message %+v", hist[n-1])
	}
	if m := hist[n-2]; m.Type != agent.MessageAssistant || !m.Interrupted || m.Content[0].Body != "so far" {
		t.Fatalf("the kept answer %+v", m)
	}
	if len(g.fake.Requests()) != 0 {
		t.Fatal("the model was asked past the bound")
	}
}

// TestRecoverContinuationRefused: a provider that refuses the
// continuation request ends the turn with its error; the kept text stays.
func TestRecoverContinuationRefused(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.startTurnInStore(c)
	seq := g.appendEvents(c, agent.Event{Type: agent.EventStartResponse}, agent.Event{Type: agent.EventAppendText, Text: "kept words"})
	g.fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "continue_final_message is not supported"})
	g.close()
	g.open()
	sub, ctx := g.after(c, seq)
	evs := untilEnd(t, ctx, sub)
	if got := types(evs); got != "continued message:assistant_message message:error error end" {
		t.Fatalf("events %s", got)
	}
	hist := g.history(c)
	n := len(hist)
	if m := hist[n-2]; !m.Interrupted || m.Content[0].Body != "kept words" {
		t.Fatalf("the kept answer %+v", m)
	}
	if m := hist[n-1]; m.Code != agent.CodeModelError || !strings.Contains(m.Error, "not supported") {
		t.Fatalf("the error %+v", m)
	}
}

// startTurnWithMemory is startTurnInStore with the user's message in
// working memory, as a send writes it.
func (g *rig) startTurnWithMemory(c agent.Conversation) {
	g.t.Helper()
	user := agent.Message{Type: agent.MessageUser, ID: agent.NewID(), ConversationID: c.ID, Date: time.Now(), Content: []agent.Content{agent.Text("hi")}}
	rec := &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: c.ID, Event: &agent.Event{Type: agent.EventMessage, Message: &user}},
		Turn: agent.TurnStart, Memory: []agent.ModelMessage{{Role: agent.RoleUser, Content: user.Content}}}
	if err := g.st.Append(context.Background(), rec); err != nil {
		g.t.Fatal(err)
	}
}

// TestRecoverSkipsATurnThatEndedMeanwhile: a turn of this runner that
// ends between Recover's read of the running turns and its check of its
// own is not recovered as if it had died: its end is written once. (The
// soak found a second, lone end in a quarter of its conversations: the
// periodic Recover read them running, their turns ended, and it ended
// them again.)
func TestRecoverSkipsATurnThatEndedMeanwhile(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.endDuringRecover(c.ID)
	if n, all := g.ends(c.ID); n != 1 {
		t.Fatalf("%d ends in the log, want 1: %s", n, all)
	}
}

// TestRecoverNotDelayedByAnotherTurnsEnd: a turn of this runner that ends
// during Recover's pass, in another conversation, does not make Recover
// leave a dead turn to its next pass (30 s later), even when the two
// conversations share a stripe of the counts a send compares.
func TestRecoverNotDelayedByAnotherTurnsEnd(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) { c.Continuations = -1 })
	dead := g.create(false)
	var live agent.Conversation
	for {
		live = g.create(false)
		if agent.EndStripe(live.ID) == agent.EndStripe(dead.ID) {
			break
		}
	}
	g.startTurnInStore(dead) // a turn whose process died
	g.endDuringRecover(live.ID)
	if c, err := g.cs.Get(context.Background(), dead.ID); err != nil || c.Running {
		t.Fatalf("the dead turn after Recover's pass: running %v, %v; want it ended in this pass", c.Running, err)
	}
}

// endDuringRecover runs a turn in conversation id that ends between
// Recover's read of the running turns and its check of its own: the turn
// starts, held; Recover reads and waits; the turn ends and leaves the
// runner; then Recover goes on, and this returns when it has.
func (g *rig) endDuringRecover(id string) {
	t := g.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: id}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	hold := make(chan struct{})
	g.fake.Enqueue(llmtest.Reply{Text: "the answer", Hold: hold})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: id, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	read, resume := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	agent.SetRecoverHook(g.r, func() {
		if once.CompareAndSwap(false, true) {
			close(read)
			<-resume
		}
	})
	recovered := make(chan error, 1)
	go func() { recovered <- g.r.Recover(ctx) }()
	<-read // Recover has read the conversation running
	close(hold)
	untilEnd(t, ctx, sub)
	if err := agent.AwaitForgotten(ctx, g.r, id); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if err := <-recovered; err != nil {
		t.Fatal(err)
	}
}

// ends counts the end events in conversation id's log, and names every
// event there.
func (g *rig) ends(id string) (int, string) {
	g.t.Helper()
	evs, err := g.st.Events(context.Background(), agent.EventQuery{ConversationID: id, Limit: 1000})
	if err != nil {
		g.t.Fatal(err)
	}
	var ts []agent.Event
	n := 0
	for _, e := range evs {
		ts = append(ts, *e.Event)
		if e.Event.Type == agent.EventEnd {
			n++
		}
	}
	return n, types(ts)
}
