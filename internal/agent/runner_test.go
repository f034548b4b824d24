package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/testwait"
)

// rig is a runner over a real SQLite file, a real broker and the fake
// OpenAI-compatible model over HTTP, built by app.Wire, the wiring app.Run
// (cmd/agentik) serves: the model is the one the environment names (the
// fake) and the tools stand in for an mcp.json's, so a wiring bug in Run
// fails these tests too.
type rig struct {
	t      testing.TB
	dbPath string
	w      *app.Wired
	app    *app.App
	st     *store.Store
	b      *broker.Broker
	r      *agent.Runner
	cs     *agent.Conversations // the services of app.Wire
	as     *agent.Agents
	mem    *agent.Memory
	fake   *llmtest.Server
	url    string
	tools  agent.Tools
	// approval, when set, is agent.Config.Approval.
	approval func(string) bool
	// onCommit, when set, sees every committed batch on the store's writer
	// goroutine, before the Append that wrote it returns.
	onCommit func([]agent.AllEvent)
	// configure, when set, adjusts the runner's config, as Wire made it,
	// on every open; it is told how the model is reached.
	configure func(*agent.Config, llm.Config)
}

func newRig(t testing.TB, tools agent.Tools) *rig {
	t.Helper()
	return newRigWith(t, tools, nil)
}

// newRigWith is newRig with a fake made with opts and a configure hook
// (set before the first open).
func newRigWith(t testing.TB, tools agent.Tools, configure func(*agent.Config, llm.Config), opts ...llmtest.Option) *rig {
	t.Helper()
	fake, url := llmtest.NewHTTPServer(t, append([]llmtest.Option{llmtest.WithModels("fake")}, opts...)...)
	g := &rig{t: t, dbPath: filepath.Join(t.TempDir(), "agentik.db"), fake: fake, url: url, tools: tools, configure: configure}
	g.open()
	t.Cleanup(g.close)
	return g
}

// open starts the server's wiring on the rig's database, as a process
// start does.
func (g *rig) open() {
	g.t.Helper()
	env := map[string]string{"OPENAI_BASE_URL": g.url, "OPENAI_MODEL": "fake"}
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + g.dbPath, Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn}
	// The fake's abilities, as an mcp.json's Manager has them all: its
	// calls with images (toolcall_test.go), its servers (wire_test.go).
	content, _ := g.tools.(agent.ContentTools)
	lister, _ := g.tools.(server.ToolLister)
	w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{
		OnCommit: func(evs []agent.AllEvent) {
			if g.onCommit != nil {
				g.onCommit(evs)
			}
		},
		Tools: g.tools, ContentTools: content, ToolLister: lister,
		Configure: func(acfg *agent.Config, _ *server.Config) {
			if g.approval != nil {
				acfg.Approval = g.approval
			}
			if g.configure != nil {
				g.configure(acfg, llm.Config{BaseURL: g.url, Model: "fake"})
			}
		},
	})
	if err != nil {
		g.t.Fatal(err)
	}
	g.w, g.app, g.st, g.b, g.r = w, w.App, w.Store, w.Broker, w.Runner
	g.cs, g.as, g.mem = w.App.Conversations, w.App.Agents, w.App.Memory
}

// close stops the wiring as app.Run's shutdown does: the runner, the
// server's streams, then the rest.
func (g *rig) close() {
	if g.st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	if err := g.r.Close(ctx); err != nil {
		g.t.Error(err)
	}
	if err := g.app.Server.Shutdown(ctx); err != nil {
		g.t.Error(err)
	}
	g.w.Close(ctx)
	if err := g.app.Close(ctx); err != nil { // what Close met closing the store
		g.t.Error(err)
	}
	g.st = nil
}

func (g *rig) create(temp bool) agent.Conversation {
	g.t.Helper()
	c, err := g.r.Create(context.Background(), agent.NewConversation{Temp: temp})
	if err != nil {
		g.t.Fatal(err)
	}
	return c
}

// turn subscribes to the conversation, sends text and returns the turn's
// events up to and including end.
func (g *rig) turn(c agent.Conversation, text string) []agent.Event {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub, err := g.b.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		g.t.Fatal(err)
	}
	defer sub.Close()
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text(text)}}); err != nil {
		g.t.Fatal(err)
	}
	return untilEnd(g.t, ctx, sub)
}

func untilEnd(t testing.TB, ctx context.Context, sub *broker.Sub) []agent.Event {
	t.Helper()
	var evs []agent.Event
	for {
		it, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", types(evs), err)
		}
		if it.CaughtUp {
			continue
		}
		ev, err := it.Event.Decode()
		if err != nil || ev.Event == nil {
			t.Fatalf("event %s: %v", it.Event.JSON, err)
		}
		evs = append(evs, *ev.Event)
		if ev.Event.Type == agent.EventEnd {
			return evs
		}
	}
}

// types renders events compactly: message events as message:<type>, text
// merged.
func types(evs []agent.Event) string {
	var out []string
	for _, e := range evs {
		s := e.Type
		if e.Type == agent.EventMessage {
			s += ":" + e.Message.Type
		}
		if e.Type == agent.EventAppendText && len(out) > 0 && out[len(out)-1] == s {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func text(evs []agent.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == agent.EventAppendText {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// startTurnInStore writes what a turn's start leaves in the store (the
// user's message, the conversation marked running) without running it: as
// a process that died, or another instance, would have.
func (g *rig) startTurnInStore(c agent.Conversation) *agent.Record {
	g.t.Helper()
	user := agent.Message{Type: agent.MessageUser, ID: agent.NewID(), ConversationID: c.ID, Date: time.Now(), Content: []agent.Content{agent.Text("hi")}}
	rec := &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: c.ID, Event: &agent.Event{Type: agent.EventMessage, Message: &user}}, Turn: agent.TurnStart}
	if err := g.st.Append(context.Background(), rec); err != nil {
		g.t.Fatal(err)
	}
	return rec
}

func (g *rig) history(c agent.Conversation) []agent.Message {
	g.t.Helper()
	ms, err := g.cs.Messages(context.Background(), agent.MessageQuery{ConversationID: c.ID, Limit: 1000})
	if err != nil {
		g.t.Fatal(err)
	}
	return ms
}

func TestTurnEventOrder(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Reasoning: "let me think", Text: "Hello there friend", Usage: &agent.Usage{PromptTokens: 5, CompletionTokens: 3, TotalTokens: 8}})
	evs := g.turn(c, "hi")
	want := "message:user_message start_reasoning append_text start_response append_text message:assistant_message end"
	if got := types(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if got := text(evs); got != "let me thinkHello there friend" {
		t.Errorf("streamed text %q", got)
	}
	end := evs[len(evs)-1]
	if end.Usage == nil || end.Usage.TotalTokens != 8 {
		t.Errorf("end usage %+v, want total 8", end.Usage)
	}
	hist := g.history(c)
	if len(hist) != 2 || hist[1].Reasoning != "let me think" || hist[1].Content[0].Body != "Hello there friend" {
		t.Fatalf("history %+v", hist)
	}
	// A Message's seq is the seq of its message event.
	stored, err := g.st.Events(context.Background(), agent.EventQuery{ConversationID: c.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seqOf := map[string]int64{}
	for _, e := range stored {
		if e.Event.Type == agent.EventMessage {
			seqOf[e.Event.Message.ID] = e.Seq
		}
	}
	for _, m := range hist {
		if m.Seq == 0 || seqOf[m.ID] != m.Seq {
			t.Errorf("message %s seq %d, its event's seq %d", m.ID, m.Seq, seqOf[m.ID])
		}
	}
	got, err := g.cs.Get(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "hi" || got.MessageCount != 2 || got.Running {
		t.Errorf("conversation after turn: %+v", got)
	}
}

func TestBusyAndIdempotentSend(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	hold := make(chan struct{})
	g.fake.Enqueue(llmtest.Reply{Text: "done", Hold: hold})
	ctx := context.Background()
	first, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}, ClientID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("two")}, ClientID: "k2"}); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("send during a turn: %v, want busy", err)
	}
	again, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}, ClientID: "k1"})
	if err != nil || !again.Duplicate || again.MessageID != first.MessageID {
		t.Fatalf("resend with the same client_id: %+v, %v", again, err)
	}
	running, err := g.cs.Get(ctx, c.ID)
	if err != nil || !running.Running || running.TurnSeq != first.Seq {
		t.Fatalf("running conversation %+v, %v; want turn_seq %d", running, err, first.Seq)
	}
	close(hold)
	waitIdle(t, g.r, c.ID)
	again, err = g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}, ClientID: "k1"})
	if err != nil || !again.Duplicate {
		t.Fatalf("resend after the turn: %+v, %v", again, err)
	}
	users := 0
	for _, m := range g.history(c) {
		if m.Type == agent.MessageUser {
			users++
		}
	}
	if users != 1 {
		t.Errorf("%d user messages, want 1", users)
	}
}

// await waits until cond holds of conversation id: it re-reads it at each
// turn's end (agent.Await); what names the condition for the failure.
func await(t *testing.T, r *agent.Runner, id, what string, cond func(agent.Conversation) bool) agent.Conversation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	c, err := agent.Await(ctx, r, id, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v (conversation %+v)", what, err, c)
	}
	return c
}

// waitIdle waits until the conversation runs no turn.
func waitIdle(t *testing.T, r *agent.Runner, id string) {
	t.Helper()
	await(t, r, id, "the turn to end", func(c agent.Conversation) bool { return !c.Running })
}

func TestInterruptKeepsPartialAnswer(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: strings.Repeat("word ", 400), Delay: 5 * time.Millisecond})
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
		ev, err := it.Event.Decode()
		if err != nil || ev.Event == nil {
			t.Fatalf("event %s: %v", it.Event.JSON, err)
		}
		evs = append(evs, *ev.Event)
	}
	ok, err := g.r.Interrupt(ctx, c.ID)
	if err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	evs = append(evs, untilEnd(t, ctx, sub)...)
	if got, want := types(evs), "message:user_message start_response append_text message:assistant_message interrupted end"; got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	hist := g.history(c)
	last := hist[len(hist)-1]
	if !last.Interrupted || last.Content[0].Body != text(evs) {
		t.Fatalf("interrupted message %+v; streamed %q", last, text(evs))
	}
	if ok, err := g.r.Interrupt(ctx, c.ID); err != nil || ok {
		t.Errorf("interrupt when idle: %v %v, want false", ok, err)
	}
}

func TestModelFailureThenRecovery(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	for range 3 {
		g.fake.Enqueue(llmtest.Reply{Status: 500, ErrorMessage: "upstream exploded"})
	}
	evs := g.turn(c, "hi")
	if got, want := types(evs), "message:user_message message:error error end"; got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if evs[2].Code != agent.CodeModelError || !strings.Contains(evs[2].Error, "upstream exploded") {
		t.Errorf("error event %+v", evs[2])
	}
	g.fake.Enqueue(llmtest.Reply{Text: "better now"})
	if got := text(g.turn(c, "again")); got != "better now" {
		t.Fatalf("turn after failure streamed %q", got)
	}
	// The failed turn's error is in the history, not in what the model sees.
	hist := g.history(c)
	if hist[1].Type != agent.MessageError || hist[1].Code != agent.CodeModelError {
		t.Errorf("history[1] = %+v", hist[1])
	}
	reqs := g.fake.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		if strings.Contains(m.Content, "exploded") {
			t.Errorf("the error reached the model: %+v", m)
		}
	}
}

func TestStreamCutFailsTurn(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Text: "one two three four five", CutAfter: 2})
	evs := g.turn(c, "hi")
	if got := types(evs); !strings.HasSuffix(got, "message:error error end") {
		t.Fatalf("events %s", got)
	}
}

// fakeTools is a tool set at the Tools seam.
type fakeTools struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeTools) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "calc__add", Description: "adds", Parameters: []byte(`{"type":"object"}`)}, {Name: "calc__fail"}}
}

func (f *fakeTools) Call(ctx context.Context, name, args string) (string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+args)
	f.mu.Unlock()
	if name == "calc__fail" {
		return "", agent.Errorf(agent.CodeToolError, "calc is broken")
	}
	return "42", nil
}

func TestToolLoop(t *testing.T) {
	t.Parallel()
	tools := &fakeTools{}
	g := newRig(t, tools)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{"a":40,"b":2}`}, {ID: "c2", Name: "calc__fail", Arguments: `{}`}}, SplitArgs: true,
		Usage: &agent.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}})
	g.fake.Enqueue(llmtest.Reply{Text: "It is 42", Usage: &agent.Usage{PromptTokens: 20, CompletionTokens: 3, TotalTokens: 23}})
	evs := g.turn(c, "add")
	want := "message:user_message tool_call tool_call message:tool_call message:tool_call tool_result message:tool_result tool_result message:tool_result start_response append_text message:assistant_message end"
	if got := types(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	// The tool-calls-only round left no answer: its usage goes on the final
	// answer, so the turn's answers add up to end.usage.
	total := agent.Usage{PromptTokens: 30, CompletionTokens: 8, TotalTokens: 38}
	answer := evs[len(evs)-2].Message
	if answer.Usage == nil || *answer.Usage != total || evs[len(evs)-1].Usage == nil || *evs[len(evs)-1].Usage != total {
		t.Errorf("answer usage %+v, end usage %+v, want both %+v", answer.Usage, evs[len(evs)-1].Usage, total)
	}
	var results []agent.Event
	for _, e := range evs {
		if e.Type == agent.EventToolResult {
			results = append(results, e)
		}
	}
	if results[0].Result != "42" || results[0].IsError || !results[1].IsError || !strings.Contains(results[1].Result, "broken") {
		t.Errorf("results %+v", results)
	}
	reqs := g.fake.Requests()
	second := reqs[len(reqs)-1]
	if len(second.Tools) != 5 || second.Tools[2].Name != agent.ToolMemoryAppend {
		t.Errorf("tools offered: %+v, want calc's two and memory's three", second.Tools)
	}
	var sawResult bool
	for _, m := range second.Messages {
		if m.Role == "tool" && m.ToolCallID == "c1" && m.Content == "42" {
			sawResult = true
		}
	}
	if !sawResult {
		t.Errorf("the tool result did not reach the model: %+v", second.Messages)
	}
}

func TestMemorySurvivesRestart(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	g.fake.Enqueue(llmtest.Reply{Reasoning: "r1", Text: "first answer"})
	g.turn(c, "first question")
	g.close()
	g.open()
	g.fake.Enqueue(llmtest.Reply{Text: "second answer"})
	g.turn(c, "second question")
	reqs := g.fake.Requests()
	var roles []string
	for _, m := range reqs[len(reqs)-1].Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	got := strings.Join(roles, "|")
	want := "system:" + agent.DefaultSystemPrompt + "|user:first question|assistant:first answer|user:second question"
	if got != want {
		t.Fatalf("context after restart\n got %s\nwant %s", got, want)
	}
}

// TestShutdownLeavesTurnToContinue: Close stops a turn mid-answer without
// ending it (it stays running in the store, as after a crash), and the
// next start continues it: the answer is what was streamed before the
// stop and what the model adds, one answer, with no interrupted event.
func TestShutdownLeavesTurnToContinue(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	hold := make(chan struct{})
	defer close(hold)
	g.fake.Enqueue(llmtest.Reply{Text: "one two three four", HoldAfter: 2, Hold: hold})
	sub, ctx := g.after(c, 0)
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	for kept.String() != "one two" {
		it, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if it.CaughtUp {
			continue
		}
		if ev, err := it.Event.Decode(); err == nil && ev.Event != nil && ev.Event.Type == agent.EventAppendText {
			kept.WriteString(ev.Event.Text)
		}
	}
	g.close()
	g.fake.Enqueue(llmtest.Reply{Text: " three four"})
	g.open()
	sub, ctx = g.after(c, 0)
	evs := untilEnd(t, ctx, sub)
	if got := types(evs); got != "message:user_message start_response append_text continued append_text message:assistant_message end" {
		t.Fatalf("events %s", got)
	}
	if got := text(evs); got != "one two three four" {
		t.Fatalf("the streamed text %q", got)
	}
	h := g.history(c)
	if m := h[len(h)-1]; m.Interrupted || m.Content[0].Body != "one two three four" {
		t.Fatalf("the answer %+v", m)
	}
}

func TestTempConversationNeverStored(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(true)
	g.fake.Enqueue(llmtest.Reply{Text: "ephemeral"})
	evs := g.turn(c, "hi")
	if text(evs) != "ephemeral" {
		t.Fatalf("text %q", text(evs))
	}
	_, head, err := g.st.Bounds(context.Background())
	if err != nil || head != 0 {
		t.Fatalf("stored head %d, %v; a temp conversation must store nothing", head, err)
	}
	if _, err := g.st.Conversation(context.Background(), c.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("temp conversation in the store: %v", err)
	}
	list, total, err := g.cs.List(context.Background(), 0, 10)
	if err != nil || total != 1 || !list[0].Temp || list[0].MessageCount != 2 {
		t.Fatalf("list %+v %d %v", list, total, err)
	}
	if len(g.history(c)) != 2 {
		t.Errorf("temp history %+v", g.history(c))
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	ctx := context.Background()
	_, before, _ := g.st.Bounds(ctx)
	tests := []struct {
		name string
		do   func() error
		code string
	}{
		{"unknown conversation", func() error {
			_, err := g.r.Start(ctx, agent.StartInput{ConversationID: "nope", Content: []agent.Content{agent.Text("x")}})
			return err
		}, agent.CodeNotFound},
		{"empty content", func() error {
			_, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: nil})
			return err
		}, agent.CodeBadRequest},
		{"rename empty", func() error { _, err := g.cs.Rename(ctx, c.ID, "  "); return err }, agent.CodeBadRequest},
		{"rename long", func() error { _, err := g.cs.Rename(ctx, c.ID, strings.Repeat("x", 201)); return err }, agent.CodeBadRequest},
		{"rename unknown", func() error { _, err := g.cs.Rename(ctx, "nope", "t"); return err }, agent.CodeNotFound},
		{"delete unknown", func() error { return g.r.Delete(ctx, "nope") }, agent.CodeNotFound},
		{"negative offset", func() error { _, _, err := g.cs.List(ctx, -1, 10); return err }, agent.CodeBadRequest},
		{"huge limit", func() error { _, _, err := g.cs.List(ctx, 0, 5000); return err }, agent.CodeBadRequest},
		{"messages unknown", func() error {
			_, err := g.cs.Messages(ctx, agent.MessageQuery{ConversationID: "nope", Limit: 10})
			return err
		}, agent.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if got := agent.ErrorCode(err); err == nil || got != tt.code {
				t.Fatalf("got %v (%s), want %s", err, got, tt.code)
			}
		})
	}
	if _, after, _ := g.st.Bounds(ctx); after != before {
		t.Errorf("bad input wrote %d events", after-before)
	}
}

func TestDeleteInterruptsRunningTurn(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	hold := make(chan struct{})
	defer close(hold)
	g.fake.Enqueue(llmtest.Reply{Text: "x", Hold: hold})
	ctx := context.Background()
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hi")}}); err != nil {
		t.Fatal(err)
	}
	if err := g.r.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.cs.Get(ctx, c.ID); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("deleted conversation: %v", err)
	}
}

// TestSendRightAfterEnd: a client that saw end may send at once.
func TestSendRightAfterEnd(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	sub, err := g.b.Subscribe(t.Context(), broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Each turn has the broken-build bound: 50 turns under -race on a
	// loaded machine may take longer than any bound on them all.
	turn := func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		g.fake.Enqueue(llmtest.Reply{Text: fmt.Sprintf("answer %d", i)})
		if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("q")}}); err != nil {
			t.Fatalf("send %d right after the previous end: %v", i, err)
		}
		if got := text(untilEnd(t, ctx, sub)); got != fmt.Sprintf("answer %d", i) {
			t.Fatalf("turn %d streamed %q", i, got)
		}
	}
	for i := range 50 {
		turn(i)
	}
}

// TestFastStreamCoalesces: tokens that arrive faster than they are
// written are merged into fewer append_text events, with exactly the same
// text. The model sends them without pause: with a pause between them
// (Reply.Delay) a loaded machine spaces them past the linger and the
// count measures the machine (the linger's rule itself: linger_test.go).
func TestFastStreamCoalesces(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	want := strings.Repeat("tok ", 300)
	g.fake.Enqueue(llmtest.Reply{Text: want})
	evs := g.turn(c, "go")
	n := 0
	for _, e := range evs {
		if e.Type == agent.EventAppendText {
			n++
		}
	}
	if got := text(evs); got != want {
		t.Fatalf("text differs: %d bytes, want %d", len(got), len(want))
	}
	if n > 150 {
		t.Errorf("%d append_text events for 300 tokens sent at once; want them merged", n)
	}
	t.Logf("300 tokens → %d append_text events", n)
}

// TestListPagesTempThenStored: temp conversations come first, then stored
// ones most recently updated first; pages and the total span both.
func TestListPagesTempThenStored(t *testing.T) {
	t.Parallel()
	// A clock that moves a millisecond at each reading: every
	// conversation gets its own updated_at.
	var tick atomic.Int64
	base := time.Now()
	g := newRigWith(t, nil, func(c *agent.Config, _ llm.Config) {
		c.Now = func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	})
	ctx := context.Background()
	var stored []string
	for range 3 {
		stored = append(stored, g.create(false).ID)
	}
	t1, t2 := g.create(true), g.create(true)
	page := func(offset, limit int) []string {
		t.Helper()
		cs, total, err := g.cs.List(ctx, offset, limit)
		if err != nil || total != 5 {
			t.Fatalf("page %d+%d: total %d, %v", offset, limit, total, err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		return ids
	}
	want := []string{t2.ID, t1.ID, stored[2], stored[1], stored[0]}
	var got []string
	got = append(got, page(0, 2)...)
	got = append(got, page(2, 2)...)
	got = append(got, page(4, 2)...)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages\n got %v\nwant %v", got, want)
	}
	if all := page(0, 100); len(all) != 5 {
		t.Fatalf("one page of everything: %v", all)
	}
}

// TestInterruptRightAfterEnd: an interrupt that arrives once end is
// published, while the turn is still finishing, finds no turn to stop. The
// interrupt is sent from the commit of the end itself, so the turn cannot
// have finished yet.
func TestInterruptRightAfterEnd(t *testing.T) {
	t.Parallel()
	g := newRig(t, nil)
	c := g.create(false)
	ctx := context.Background()
	type result struct {
		ok  bool
		err error
	}
	got := make(chan result, 1)
	found := make(chan struct{})
	agent.SetInterruptHook(g.r, func(string) { close(found) })
	var once sync.Once
	g.onCommit = func(evs []agent.AllEvent) {
		for _, e := range evs {
			if e.Event != nil && e.Event.Type == agent.EventEnd {
				once.Do(func() {
					go func() {
						ok, err := g.r.Interrupt(ctx, c.ID)
						got <- result{ok, err}
					}()
					// The end is committed and its Append has not
					// returned: the turn is still registered, finishing,
					// when the interrupt finds it.
					<-found
				})
			}
		}
	}
	g.fake.Enqueue(llmtest.Reply{Text: "done"})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("q")}}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.ok {
		t.Fatalf("interrupt after end = %v, %v; want false", r.ok, r.err)
	}
}
