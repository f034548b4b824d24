package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
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
	return await(t, r, id, fmt.Sprintf("%d waiting", n), func(c agent.Conversation) bool { return len(c.Waiting) == n })
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
	t.Parallel()
	g, tools := approvalRig(t)
	c := g.create(false)
	ctx := context.Background()
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{"a":1}`}, {ID: "c2", Name: "calc__fail", Arguments: `{}`}}})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
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
	if got, _ := g.cs.Get(ctx, c.ID); len(got.Waiting) != 0 {
		t.Errorf("still waiting: %+v", got)
	}
}

// TestApprovalDenyAndInterrupt: a denial reaches the model with its
// reason; interrupt ends a waiting turn.
func TestApprovalDenyAndInterrupt(t *testing.T) {
	t.Parallel()
	for _, temp := range []bool{false, true} {
		g, tools := approvalRig(t)
		c := g.create(temp)
		ctx := context.Background()
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "d1", Name: "calc__add", Arguments: `{}`}}})
		g.fake.Enqueue(llmtest.Reply{Text: "ok, I will not"})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
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
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("again")}}); err != nil {
			t.Fatal(err)
		}
		waitWaiting(t, g.r, c.ID, 1)
		if ok, err := g.r.Interrupt(ctx, c.ID); err != nil || !ok {
			t.Fatalf("interrupt of a waiting turn: %v %v", ok, err)
		}
		got, _ := g.cs.Get(ctx, c.ID)
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

// nextWaiting returns the waiting list of the next waiting agent event of
// sub, as JSON.
func nextWaiting(t *testing.T, ctx context.Context, sub *broker.Sub, id string) string {
	t.Helper()
	for {
		it, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no waiting event: %v", err)
		}
		if it.CaughtUp {
			continue
		}
		ev, err := it.Event.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.Agent; a != nil && a.Type == agent.AgentWaiting && a.ConversationID == id {
			var w struct {
				Event struct {
					Waiting json.RawMessage `json:"waiting"`
				} `json:"event"`
			}
			if err := json.Unmarshal(it.Event.JSON, &w); err != nil {
				t.Fatal(err)
			}
			return string(w.Event.Waiting)
		}
	}
}

// TestApprovalWaitingAgentEvents: the agent stream says which calls of a
// conversation wait each time that changes: when a round parks, after
// each decision (the last leaves []), and when an interrupt ends the wait;
// in stored and temp conversations alike.
func TestApprovalWaitingAgentEvents(t *testing.T) {
	t.Parallel()
	for _, temp := range []bool{false, true} {
		g, _ := approvalRig(t)
		c := g.create(temp)
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAgent}, -1, "")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "w1", Name: "calc__add", Arguments: `{}`}, {ID: "w2", Name: "calc__add", Arguments: `{}`}}})
		g.fake.Enqueue(llmtest.Reply{Text: "done"})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
			t.Fatal(err)
		}
		if got := nextWaiting(t, ctx, sub, c.ID); got != `["w1","w2"]` {
			t.Fatalf("temp %v: parked: waiting %s", temp, got)
		}
		if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "w2", Decision: "deny"}); err != nil {
			t.Fatal(err)
		}
		if got := nextWaiting(t, ctx, sub, c.ID); got != `["w1"]` {
			t.Fatalf("temp %v: after one decision: waiting %s", temp, got)
		}
		if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "w1", Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		if got := nextWaiting(t, ctx, sub, c.ID); got != `[]` {
			t.Fatalf("temp %v: after the last decision: waiting %s", temp, got)
		}
		waitIdle(t, g.r, c.ID)

		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "w3", Name: "calc__add", Arguments: `{}`}}})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("again")}}); err != nil {
			t.Fatal(err)
		}
		if got := nextWaiting(t, ctx, sub, c.ID); got != `["w3"]` {
			t.Fatalf("temp %v: parked again: waiting %s", temp, got)
		}
		if _, err := g.r.Interrupt(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if got := nextWaiting(t, ctx, sub, c.ID); got != `[]` {
			t.Fatalf("temp %v: after the interrupt: waiting %s", temp, got)
		}
	}
}

// fakeTimers is an injected clock with timers the test fires.
type fakeTimers struct {
	mu     sync.Mutex
	now    time.Time
	armed  []fakeTimer
	notify chan struct{} // gets a value per armed timer
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func newFakeTimers() *fakeTimers {
	return &fakeTimers{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), notify: make(chan struct{}, 16)}
}

func (c *fakeTimers) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeTimers) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	c.armed = append(c.armed, fakeTimer{at: c.now.Add(d), f: f})
	c.mu.Unlock()
	c.notify <- struct{}{}
	return func() bool { return true }
}

func (c *fakeTimers) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// next waits for the next armed timer and returns when it is due, then
// runs it (in the caller, as a timer's goroutine would).
func (c *fakeTimers) next(t *testing.T) (at time.Time, fire func()) {
	t.Helper()
	select {
	case <-c.notify:
	case <-time.After(testwait.Timeout):
		t.Fatal("no timer was armed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := c.armed[0]
	c.armed = c.armed[1:]
	return tm.at, tm.f
}

func (c *fakeTimers) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.armed)
}

// timeoutRig is an approval rig with AGENTIK_APPROVAL_TIMEOUT's setting
// and the clock of clk.
func timeoutRig(t *testing.T, limit time.Duration, clk *fakeTimers) (*rig, *fakeTools) {
	tools := &fakeTools{}
	fake, url := llmtest.NewHTTPServer(t)
	g := &rig{t: t, dbPath: t.TempDir() + "/agentik.db", fake: fake, url: url, tools: tools,
		approval: func(name string) bool { return name == "calc__add" },
		configure: func(c *agent.Config, _ llm.Config) {
			c.ApprovalTimeout, c.Now, c.AfterFunc = limit, clk.Now, clk.AfterFunc
		}}
	g.open()
	t.Cleanup(g.close)
	return g, tools
}

// TestApprovalTimeout: a call that waits past the timeout is denied with a
// reason the model reads; a timer that fires early (the clock says the
// deadline has not come) arms again for the rest.
func TestApprovalTimeout(t *testing.T) {
	t.Parallel()
	clk := newFakeTimers()
	g, tools := timeoutRig(t, time.Minute, clk)
	c := g.create(false)
	ctx := context.Background()
	start := clk.Now()
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "t1", Name: "calc__add", Arguments: `{}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "no answer, then"})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	at, fire := clk.next(t)
	if want := start.Add(time.Minute); !at.Equal(want) {
		t.Fatalf("timer due %v, want %v (the request time plus the timeout)", at, want)
	}
	waitWaiting(t, g.r, c.ID, 1)
	clk.advance(30 * time.Second)
	fire() // early: nothing is decided
	if w := waitWaiting(t, g.r, c.ID, 1); !w.Running {
		t.Fatalf("after an early timer: %+v", w)
	}
	at, fire = clk.next(t)
	if want := start.Add(time.Minute); !at.Equal(want) {
		t.Fatalf("re-armed timer due %v, want %v", at, want)
	}
	clk.advance(31 * time.Second)
	fire()
	waitIdle(t, g.r, c.ID)
	if got := g.lastToolMessages(); len(got) != 1 || !strings.Contains(got[0], "approval timed out after 1m0s") {
		t.Errorf("the model saw %q, want the timeout", got)
	}
	if len(tools.calls) != 0 {
		t.Errorf("a timed-out tool ran: %v", tools.calls)
	}
	var saw bool
	for _, m := range g.history(c) {
		if m.Type == agent.MessageToolResult && m.CallID == "t1" && m.IsError && strings.Contains(m.Result, "timed out") {
			saw = true
		}
	}
	if !saw {
		t.Errorf("history %+v has no timed-out result", g.history(c))
	}
	if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "t1", Decision: "approve"}); !errors.Is(err, agent.ErrConflict) {
		t.Errorf("approve after the timeout: %v, want conflict", err)
	}
	if n := clk.pending(); n != 0 {
		t.Errorf("%d timers armed after the turn ended", n)
	}
}

// TestApprovalTimeoutAcrossRestart: the deadline counts from the stored
// request time. A restart before it arms the rest of the time; a deadline
// that passed while the server was down denies at start.
func TestApprovalTimeoutAcrossRestart(t *testing.T) {
	t.Parallel()
	clk := newFakeTimers()
	g, tools := timeoutRig(t, time.Minute, clk)
	c := g.create(false)
	ctx := context.Background()
	start := clk.Now()
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "r1", Name: "calc__add", Arguments: `{}`}}})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	clk.next(t) // armed by the park, never fired
	waitWaiting(t, g.r, c.ID, 1)

	g.close()
	clk.advance(20 * time.Second)
	g.open()
	at, _ := clk.next(t) // armed by recovery
	if want := start.Add(time.Minute); !at.Equal(want) {
		t.Fatalf("after a restart the timer is due %v, want %v (from the stored request time)", at, want)
	}
	waitWaiting(t, g.r, c.ID, 1)

	g.close()
	clk.advance(5 * time.Minute) // the deadline passes while the server is down
	g.fake.Enqueue(llmtest.Reply{Text: "it timed out"})
	g.open()
	at, fire := clk.next(t)
	if !at.Before(clk.Now()) {
		t.Fatalf("after a long restart the timer is due %v, want before now %v", at, clk.Now())
	}
	fire()
	waitIdle(t, g.r, c.ID)
	if got := g.lastToolMessages(); len(got) != 1 || !strings.Contains(got[0], "approval timed out after 1m0s") {
		t.Errorf("the model saw %q, want the timeout", got)
	}
	if len(tools.calls) != 0 {
		t.Errorf("a timed-out tool ran: %v", tools.calls)
	}
}

// TestApprovalWhileParking: a decision that arrives while the goroutine
// that parked the round has not exited yet waits for it, then resumes the
// turn: the tool runs exactly once and the decision is not lost.
func TestApprovalWhileParking(t *testing.T) {
	t.Parallel()
	g, tools := approvalRig(t)
	c := g.create(false)
	ctx := context.Background()
	resumeWaits := make(chan struct{}, 1)
	approved := make(chan error, 1)
	agent.SetRaceHooks(g.r, func(id string) {
		// The round is stored as waiting; this goroutine is still the
		// conversation's turn. Decide now, and let it exit only once the
		// decision is stored and its resume has seen the turn (or, without
		// the wait, gave up on it).
		go func() {
			approved <- g.r.Approve(ctx, id, agent.ApprovalInput{CallID: "p1", Decision: "approve"})
		}()
		select {
		case <-resumeWaits:
		case err := <-approved:
			approved <- err
		}
	}, func(string) { resumeWaits <- struct{}{} })
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "p1", Name: "calc__add", Arguments: `{"a":1}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	if err := <-approved; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, g.r, c.ID)
	tools.mu.Lock()
	calls := strings.Join(tools.calls, ";")
	tools.mu.Unlock()
	if calls != `calc__add {"a":1}` {
		t.Errorf("tool calls %q, want exactly one", calls)
	}
	hist := g.history(c)
	if last := hist[len(hist)-1]; last.Type != agent.MessageAssistant || last.Content[0].Body != "done" {
		t.Errorf("last message %+v, want the answer after the tool", last)
	}
}

// TestTwoResumesRunTheRoundOnce: of two resumes of one decided round (the
// decision's own and Recover's), the one whose reads went stale while the
// other ran the whole resumed turn reads again and does nothing: the tool
// runs once and the turn ends once.
func TestTwoResumesRunTheRoundOnce(t *testing.T) {
	t.Parallel()
	g, tools := approvalRig(t)
	c := g.create(false)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "p1", Name: "calc__add", Arguments: `{"a":1}`}}})
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
		t.Fatal(err)
	}
	waitWaiting(t, g.r, c.ID, 1)
	if err := agent.AwaitForgotten(ctx, g.r, c.ID); err != nil {
		t.Fatal(err)
	}
	read, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	agent.SetResumeHook(g.r, func(string) {
		if first.CompareAndSwap(false, true) {
			close(read) // the decision's resume has read the round, decided
			<-release
		}
	})
	approved := make(chan error, 1)
	go func() {
		approved <- g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "p1", Decision: "approve"})
	}()
	<-read
	// Meanwhile Recover finds the decided round that no turn runs and
	// resumes it; that turn runs to its end.
	if err := g.r.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, g.r, c.ID)
	if err := agent.AwaitForgotten(ctx, g.r, c.ID); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-approved; err != nil {
		t.Fatal(err)
	}
	if err := agent.AwaitForgotten(ctx, g.r, c.ID); err != nil { // a second resume, had it started
		t.Fatal(err)
	}
	tools.mu.Lock()
	calls := strings.Join(tools.calls, ";")
	tools.mu.Unlock()
	if calls != `calc__add {"a":1}` {
		t.Errorf("tool calls %q, want exactly one", calls)
	}
	if n, all := g.ends(c.ID); n != 1 {
		t.Fatalf("%d ends in the log, want 1: %s", n, all)
	}
}

// TestSendRacingThePark: a send that read the conversation while its turn
// still ran, and takes the lock as that turn parks its round for approval,
// is busy saying so; it never starts a second turn beside the waiting one
// (temp conversations included) nor blames another instance.
func TestSendRacingThePark(t *testing.T) {
	t.Parallel()
	for _, temp := range []bool{false, true} {
		g, tools := approvalRig(t)
		c := g.create(temp)
		ctx := context.Background()
		parked := make(chan struct{})
		agent.SetRaceHooks(g.r, func(string) { close(parked) }, nil)
		var sends atomic.Int32
		agent.SetSendHook(g.r, func(string) {
			if sends.Add(1) == 2 { // the racing send: let the turn park first
				<-parked
			}
		})
		hold := make(chan struct{})
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "r1", Name: "calc__add", Arguments: `{}`}}, Hold: hold})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
			t.Fatal(err)
		}
		raced := make(chan error, 1)
		go func() {
			_, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("meanwhile")}})
			raced <- err
		}()
		for sends.Load() < 2 { // it has read the conversation: running, nothing waiting
			runtime.Gosched()
		}
		close(hold)
		err := <-raced
		if !errors.Is(err, agent.ErrBusy) || !strings.Contains(err.Error(), "approval") {
			t.Errorf("temp %v: racing send: %v, want busy saying the turn waits for approval", temp, err)
		}
		if w := waitWaiting(t, g.r, c.ID, 1); !w.Running {
			t.Errorf("temp %v: after the racing send: %+v", temp, w)
		}
		for _, m := range g.history(c) {
			if m.Type == agent.MessageUser && m.Content[0].Body == "meanwhile" {
				t.Errorf("temp %v: the racing send started a turn", temp)
			}
		}
		tools.mu.Lock()
		n := len(tools.calls)
		tools.mu.Unlock()
		if n != 0 {
			t.Errorf("temp %v: %d tool calls ran before a decision", temp, n)
		}
	}
}

// TestSendWhileWaiting: a send to a conversation whose turn waits for
// approval is busy, saying so (no second turn starts beside the waiting
// one, temp conversations included); queued, it runs after the turn.
func TestSendWhileWaiting(t *testing.T) {
	t.Parallel()
	for _, temp := range []bool{false, true} {
		g, _ := approvalRig(t)
		c := g.create(temp)
		ctx := context.Background()
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "s1", Name: "calc__add", Arguments: `{}`}}})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
			t.Fatal(err)
		}
		waitWaiting(t, g.r, c.ID, 1)
		_, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("meanwhile")}})
		if !errors.Is(err, agent.ErrBusy) || !strings.Contains(err.Error(), "approval") || strings.Contains(err.Error(), "another instance") {
			t.Errorf("temp %v: send while waiting: %v, want busy saying the turn waits for approval", temp, err)
		}
		if w := waitWaiting(t, g.r, c.ID, 1); !w.Running {
			t.Errorf("temp %v: after the refused send: %+v", temp, w)
		}
		if hist := g.history(c); len(hist) != 2 {
			t.Errorf("temp %v: history %+v, want the user message and the tool call only", temp, hist)
		}
		res, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("later")}, OnBusy: agent.OnBusyQueue})
		if err != nil || !res.Queued {
			t.Fatalf("temp %v: queued send while waiting: %+v, %v", temp, res, err)
		}
		g.fake.Enqueue(llmtest.Reply{Text: "added"})
		g.fake.Enqueue(llmtest.Reply{Text: "and later"})
		if err := g.r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: "s1", Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		waitDrained(t, g.r, c.ID)
		hist := g.history(c)
		if last := hist[len(hist)-1]; last.Type != agent.MessageAssistant || last.Content[0].Body != "and later" {
			t.Errorf("temp %v: last message %+v, want the queued send's answer", temp, last)
		}
	}
}

// TestApprovalNeverForAForbiddenTool: a call of a tool the conversation's
// agent may not use is not put to a person, even where the tool's server
// (or the agent itself) wants approval: it is refused at once as a tool
// error for the model, and the turn goes on without waiting.
func TestApprovalNeverForAForbiddenTool(t *testing.T) {
	t.Parallel()
	g, tools := approvalRig(t)
	ctx := context.Background()
	for _, approval := range []string{"", agent.ApprovalAlways} {
		slug, allowed := "only-fail"+approval, []string{"calc__fail"}
		change := agent.AgentChange{Slug: &slug, Tools: &allowed}
		if approval != "" {
			change.Approval = &approval
		}
		if _, err := g.as.Create(ctx, change); err != nil {
			t.Fatal(err)
		}
		c, err := g.r.Create(ctx, agent.NewConversation{Settings: agent.Settings{Agent: &slug}})
		if err != nil {
			t.Fatal(err)
		}
		g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "f1", Name: "calc__add", Arguments: `{"a":1}`}}})
		g.fake.Enqueue(llmtest.Reply{Text: "refused"})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
			t.Fatal(err)
		}
		if w := await(t, g.r, c.ID, "the turn's end or its wait", func(c agent.Conversation) bool { return !c.Running || len(c.Waiting) > 0 }); len(w.Waiting) != 0 {
			t.Fatalf("agent %s: an approval was asked for a tool it may not use: %+v", slug, w)
		}
		if got := strings.Join(g.lastToolMessages(), ";"); !strings.Contains(got, `f1=error: tool "calc__add" is not available to agent `+slug) {
			t.Errorf("agent %s: the model read %q, want the refusal", slug, got)
		}
	}
	tools.mu.Lock()
	defer tools.mu.Unlock()
	if len(tools.calls) != 0 {
		t.Errorf("the forbidden tool ran: %v", tools.calls)
	}
}
