package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// bigTools is a tool whose results are size bytes long.
type bigTools struct{ size int }

func (b *bigTools) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "files__read", Description: "reads a file", Parameters: []byte(`{"type":"object"}`)}}
}

func (b *bigTools) Call(_ context.Context, _, args string) (string, error) {
	var sb strings.Builder
	for i := 0; sb.Len() < b.size; i++ {
		fmt.Fprintf(&sb, "line %d of %s: lorem ipsum dolor sit amet\n", i, args)
	}
	return sb.String()[:b.size], nil
}

// contextScript answers like a model: the summary call (max_tokens set)
// with a short summary, a user message asking for a tool with a call, a
// tool result with an answer, anything else with a long answer.
func contextScript(req llmtest.Request) llmtest.Reply {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case req.MaxTokens > 0:
		return llmtest.Reply{Text: fmt.Sprintf("SUMMARY of %d bytes of transcript: the user asked many things.", len(req.Messages[0].Content))}
	case last.Role == "tool":
		return llmtest.Reply{Text: "The file says what you expected. " + strings.Repeat("Details follow. ", 10)}
	case strings.Contains(last.Content, "read a file"):
		return llmtest.Reply{ToolCalls: []agent.ToolCall{{Name: "files__read", Arguments: `{"path":"notes.txt"}`}}}
	}
	return llmtest.Reply{Text: "Here is a long answer: " + strings.Repeat("blah ", 60)}
}

// withWindows gives the runner the model adapter's Windows; it is returned
// through *w for the test.
func withWindows(w **llm.Windows, explicit int) func(*agent.Config, llm.Config) {
	return func(c *agent.Config, m llm.Config) {
		*w = llm.NewWindows(m, explicit)
		c.Windows = *w
		c.NoMemory = true // the windows are sized for these tests' own tools; memory's specs would count too
	}
}

// checkRequests fails unless every request fits the window and pairs
// every tool call with its result.
func checkRequests(t *testing.T, reqs []llmtest.Request, window int) (refused int) {
	t.Helper()
	for i, r := range reqs {
		if n := llmtest.PromptTokens(r) + r.MaxTokens; n > window {
			refused++
			continue
		}
		open := map[string]bool{}
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
			if m.Role == "tool" {
				if !open[m.ToolCallID] {
					t.Errorf("request %d: tool result %s without its call", i, m.ToolCallID)
				}
				delete(open, m.ToolCallID)
			}
		}
		if len(open) > 0 {
			t.Errorf("request %d: calls without results: %v", i, open)
		}
	}
	return refused
}

func summaries(hist []agent.Message) []agent.Message {
	var out []agent.Message
	for _, m := range hist {
		if m.Type == agent.MessageSummary {
			out = append(out, m)
		}
	}
	return out
}

// usageAddsUp fails unless the turn's answers add up to its end.usage,
// summary calls included.
func usageAddsUp(t *testing.T, evs []agent.Event) {
	t.Helper()
	var sum agent.Usage
	for _, e := range evs {
		if e.Type == agent.EventMessage && e.Message.Usage != nil {
			sum = sum.Add(*e.Message.Usage)
		}
	}
	end := evs[len(evs)-1]
	if end.Usage == nil || *end.Usage != sum {
		t.Errorf("end usage %+v, answers add up to %+v", end.Usage, sum)
	}
}

func noError(t *testing.T, evs []agent.Event) {
	t.Helper()
	for _, e := range evs {
		if e.Type == agent.EventError {
			t.Fatalf("turn failed: %s (%s); events %s", e.Error, e.Code, types(evs))
		}
	}
}

func TestLongConversationStaysInWindow(t *testing.T) {
	t.Parallel()
	const window = 1500
	var w *llm.Windows
	g := newRigWith(t, &bigTools{size: 1500}, withWindows(&w, 0),
		llmtest.WithWindow(window), llmtest.WithListedWindow(window), llmtest.WithScript(contextScript))
	c := g.create(false)
	const turns = 32
	sent := 0
	for i := range turns {
		msg := fmt.Sprintf("Turn %d: please tell me more about topic %d. %s", i, i, strings.Repeat("Some context. ", 15))
		if i%3 == 1 {
			msg = fmt.Sprintf("Turn %d: read a file for me", i)
		}
		sent += len(msg)
		evs := g.turn(c, msg)
		noError(t, evs)
		usageAddsUp(t, evs)
	}
	reqs := g.fake.Requests()
	if refused := checkRequests(t, reqs, window); refused > 0 {
		t.Errorf("%d of %d requests did not fit the window", refused, len(reqs))
	}
	hist := g.history(c)
	sums := summaries(hist)
	calls := 0
	for _, r := range reqs {
		if r.MaxTokens > 0 {
			calls++
		}
	}
	total := 0
	for _, m := range hist {
		total += len(m.Result)
		for _, p := range m.Content {
			total += len(p.Body)
		}
	}
	if total/3 < 3*window {
		t.Fatalf("the conversation holds %d bytes, not several windows", total)
	}
	t.Logf("%d requests, %d summary calls, %d bytes of history", len(reqs), calls, total)
	if len(sums) == 0 || calls != len(sums) || calls > turns/3 {
		t.Fatalf("%d summary calls, %d summary messages over %d turns", calls, len(sums), turns)
	}
	for _, s := range sums {
		if s.Replaces < 1 || s.TokensAfter >= s.TokensBefore || !strings.HasPrefix(s.Summary, "SUMMARY") || s.Seq == 0 {
			t.Errorf("summary message %+v", s)
		}
	}
	// Every original message is still in the history.
	if n := len(hist) - len(sums); n < 2*turns {
		t.Errorf("history keeps %d messages besides summaries, want at least %d", n, 2*turns)
	}
	conv, err := g.r.Conversation(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if conv.Context == nil || conv.Context.Window != window || conv.Context.Tokens <= 0 || conv.Context.Tokens > window {
		t.Errorf("conversation context %+v", conv.Context)
	}

	// After a restart the next turn still fits.
	g.close()
	g.open()
	before := len(g.fake.Requests())
	noError(t, g.turn(c, "After the restart: "+strings.Repeat("more context. ", 20)))
	if refused := checkRequests(t, g.fake.Requests()[before:], window); refused > 0 {
		t.Errorf("after the restart %d requests did not fit", refused)
	}
}

func TestContextWindowLearnedFromRefusal(t *testing.T) {
	t.Parallel()
	const window = 1200
	var w *llm.Windows
	// The endpoint reports no window: the runner assumes 8192 until the
	// model refuses.
	g := newRigWith(t, nil, withWindows(&w, 0), llmtest.WithWindow(window), llmtest.WithScript(contextScript))
	c := g.create(false)
	for i := range 6 {
		noError(t, g.turn(c, fmt.Sprintf("Message %d: %s", i, strings.Repeat("padding words ", 40))))
	}
	reqs := g.fake.Requests()
	refused := checkRequests(t, reqs, window)
	if refused != 1 {
		t.Fatalf("%d refusals, want exactly 1 (then learned)", refused)
	}
	if got := w.Window(context.Background(), ""); got != window {
		t.Errorf("learned window %d, want %d", got, window)
	}
	if len(summaries(g.history(c))) == 0 {
		t.Error("no summary after the refusal")
	}
	conv, _ := g.r.Conversation(context.Background(), c.ID)
	if conv.Context == nil || conv.Context.Window != window {
		t.Errorf("conversation context %+v, want window %d", conv.Context, window)
	}
}

func TestHugeToolResultIsCut(t *testing.T) {
	t.Parallel()
	const window = 2000
	var w *llm.Windows
	g := newRigWith(t, &bigTools{size: 100 << 10}, withWindows(&w, 0),
		llmtest.WithWindow(window), llmtest.WithListedWindow(window), llmtest.WithScript(contextScript))
	c := g.create(false)
	noError(t, g.turn(c, "read a file for me"))
	noError(t, g.turn(c, "thanks, and now?"))
	reqs := g.fake.Requests()
	if refused := checkRequests(t, reqs, window); refused > 0 {
		t.Fatalf("%d requests did not fit", refused)
	}
	second := reqs[1] // the round after the tool ran
	var tool llmtest.Message
	for _, m := range second.Messages {
		if m.Role == "tool" {
			tool = m
		}
	}
	if !strings.Contains(tool.Content, "bytes cut to fit") || !strings.HasPrefix(tool.Content, "line 0 of") || len(tool.Content) > 8<<10 {
		t.Errorf("tool result sent: %d bytes, head %.60q", len(tool.Content), tool.Content)
	}
	for _, m := range g.history(c) {
		if m.Type == agent.MessageToolResult && len(m.Result) != 100<<10 {
			t.Errorf("history keeps %d bytes of the result, want all of it", len(m.Result))
		}
	}
}

func TestWindowTooSmallForMessage(t *testing.T) {
	t.Parallel()
	const window = 700
	var w *llm.Windows
	g := newRigWith(t, nil, withWindows(&w, 0),
		llmtest.WithWindow(window), llmtest.WithListedWindow(window), llmtest.WithScript(contextScript))
	c := g.create(false)
	evs := g.turn(c, strings.Repeat("far too long ", 400))
	last := evs[len(evs)-2]
	if last.Type != agent.EventError || last.Code != agent.CodeModelError || !strings.Contains(last.Error, "context window (700 tokens)") {
		t.Fatalf("events %s, error %q", types(evs), last.Error)
	}
	if n := len(g.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached the model", n)
	}
	// The conversation stays usable.
	noError(t, g.turn(c, "a short one"))
	if refused := checkRequests(t, g.fake.Requests(), window); refused > 0 {
		t.Errorf("%d requests did not fit", refused)
	}
}

func TestManualCompact(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, nil, llmtest.WithScript(contextScript))
	ctx := context.Background()
	if _, err := g.r.Compact(ctx, "nope"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	tmp := g.create(true) // compacted as a stored one is (TestTempBranches)
	if res, err := g.r.Compact(ctx, tmp.ID); err != nil || res.Compacted {
		t.Errorf("empty temp: %+v %v", res, err)
	}
	c := g.create(false)
	res, err := g.r.Compact(ctx, c.ID)
	if err != nil || res.Compacted || !strings.Contains(res.Reason, "nothing to compact") {
		t.Errorf("empty: %+v %v", res, err)
	}
	noError(t, g.turn(c, "first"))
	res, err = g.r.Compact(ctx, c.ID)
	if err != nil || res.Compacted || res.Reason == "" {
		t.Errorf("one turn: %+v %v", res, err)
	}
	noError(t, g.turn(c, "second"))
	noError(t, g.turn(c, "third"))
	res, err = g.r.Compact(ctx, c.ID)
	if err != nil || !res.Compacted || res.Message == nil || res.Message.Replaces != 4 || res.Message.Seq == 0 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	// Working memory: system, summary, the last turn.
	mem, err := g.st.Memory(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range mem {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "system summary user assistant" {
		t.Errorf("memory roles %q", got)
	}
	hist := g.history(c)
	if hist[len(hist)-1].Type != agent.MessageSummary || len(hist) != 7 {
		t.Errorf("history %d messages, last %s", len(hist), hist[len(hist)-1].Type)
	}
	// The next turn sends the summary with the system prompt.
	noError(t, g.turn(c, "fourth"))
	reqs := g.fake.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.Messages[0].Content, "SUMMARY") || len(last.Messages) != 4 {
		t.Errorf("request after compaction: %+v", last.Messages)
	}

	// Running: busy.
	hold := make(chan struct{})
	g.fake.Enqueue(llmtest.Reply{Text: "slow", Hold: hold})
	if _, err := g.r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("x")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.Compact(ctx, c.ID); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("running: %v", err)
	}
	close(hold)
	waitIdle(t, g.r, c.ID)
	_ = time.Second
}

// toolLoopScript calls the tool rounds times in a row, then answers; the
// summary call gets a short summary.
func toolLoopScript(rounds int) func(llmtest.Request) llmtest.Reply {
	return func(req llmtest.Request) llmtest.Reply {
		if req.MaxTokens > 0 {
			return llmtest.Reply{Text: "SUMMARY"}
		}
		n := 0
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "user"; i-- {
			if req.Messages[i].Role == "tool" {
				n++
			}
		}
		if n < rounds {
			return llmtest.Reply{ToolCalls: []agent.ToolCall{{Name: "files__read", Arguments: fmt.Sprintf(`{"part":%d}`, n)}}}
		}
		return llmtest.Reply{Text: fmt.Sprintf("read %d parts", n)}
	}
}

func TestToolHeavyTurnStaysInWindow(t *testing.T) {
	t.Parallel()
	const window = 1500
	var w *llm.Windows
	g := newRigWith(t, &bigTools{size: 1500}, withWindows(&w, 0),
		llmtest.WithWindow(window), llmtest.WithListedWindow(window), llmtest.WithScript(toolLoopScript(8)))
	c := g.create(false)
	evs := g.turn(c, "read all the parts")
	noError(t, evs)
	if got := text(evs); got != "read 8 parts" {
		t.Errorf("answer %q", got)
	}
	reqs := g.fake.Requests()
	if refused := checkRequests(t, reqs, window); refused > 0 {
		t.Errorf("%d of %d requests did not fit the window", refused, len(reqs))
	}
	last := reqs[len(reqs)-1]
	if tool := last.Messages[len(last.Messages)-1]; tool.Role != "tool" || !strings.HasPrefix(tool.Content, "line 0 of") {
		t.Errorf("the last round's result was not sent: %+v", tool)
	}
}

func TestRefusedTwiceFailsClearly(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, nil, llmtest.WithScript(contextScript))
	c := g.create(false)
	noError(t, g.turn(c, "first"))
	refusal := llmtest.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 4000 tokens. However, your messages resulted in 4100 tokens."}
	g.fake.Enqueue(refusal)
	g.fake.Enqueue(llmtest.Reply{Text: "SUMMARY"}) // the harder compaction's summary call
	g.fake.Enqueue(refusal)
	evs := g.turn(c, "second")
	last := evs[len(evs)-2]
	if last.Type != agent.EventError || last.Code != agent.CodeModelError ||
		!strings.Contains(last.Error, "did not fit the model's context window (4000 tokens) even after compacting it and retrying once") {
		t.Fatalf("events %s, error %q", types(evs), last.Error)
	}
	// The conversation stays usable.
	noError(t, g.turn(c, "third"))
}

// A tiny window and a model whose prompt count carries a large fixed
// overhead (a chat template's preamble): the calibration from a short
// prompt overestimates everything, so the summary call has little or no
// room and a longer message looks too big; yet every message that a new
// conversation answers is answered in a long one too, and every request
// fits the window.
func TestTinyWindowNeverDeadEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		window, overhead int
		words            int // of the message, "a few words " each
		note             bool
	}{
		{"short summary", 640, 300, 12, false},  // the full instruction has no room: the short one has
		{"long message", 640, 300, 25, true},    // calibrated, the message alone seems not to fit
		{"smaller window", 520, 300, 6, false},  // a summary of a few bytes of transcript
		{"plain tiny window", 330, 0, 10, true}, // uncalibrated, no room for the summary call
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own rig
			var w *llm.Windows
			g := newRigWith(t, nil, withWindows(&w, 0), llmtest.WithWindow(tc.window), llmtest.WithListedWindow(tc.window),
				llmtest.WithPromptOverhead(tc.overhead), llmtest.WithScript(contextScript))
			msg := func(i int) string {
				return fmt.Sprintf("Message %d: %s", i, strings.Repeat("a few words ", tc.words))
			}
			// The message fits a new conversation.
			noError(t, g.turn(g.create(false), msg(0)))
			c := g.create(false)
			const turns = 6
			for i := range turns {
				noError(t, g.turn(c, msg(i)))
			}
			for i, r := range g.fake.Requests() {
				if n := g.fake.PromptTokens(r) + r.MaxTokens; n > tc.window {
					t.Errorf("request %d: %d tokens, window %d", i, n, tc.window)
				}
			}
			sums := summaries(g.history(c))
			if len(sums) < turns-1 {
				t.Fatalf("%d compactions over %d turns", len(sums), turns)
			}
			last := sums[len(sums)-1].Summary
			if note := strings.Contains(last, "left out"); note != tc.note || (!note && !strings.HasPrefix(last, "SUMMARY")) {
				t.Errorf("summary %q, want a note: %v", last, tc.note)
			}
		})
	}
}

// A summary call the model refuses for length leaves a note in its place:
// the compaction still happens and the conversation goes on.
func TestSummaryRefusedLeavesNote(t *testing.T) {
	t.Parallel()
	g := newRigWith(t, nil, nil, llmtest.WithScript(contextScript))
	ctx := context.Background()
	c := g.create(false)
	noError(t, g.turn(c, "first"))
	noError(t, g.turn(c, "second"))
	g.fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."})
	res, err := g.r.Compact(ctx, c.ID)
	if err != nil || !res.Compacted || !strings.Contains(res.Message.Summary, "2 earlier messages were left out") {
		t.Fatalf("compact: %+v %v", res, err)
	}
	mem, err := g.st.Memory(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range mem {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "system summary user assistant" {
		t.Errorf("memory roles %q", got)
	}
	noError(t, g.turn(c, "third"))
}

// Compaction cuts only between turns: what the model sees after a summary
// starts with a user message, and each summary_message names its span —
// the first kept message (a user message, after every one it summarized)
// and the first and last user messages it summarized, with their opening
// words.
func TestCompactionCutsBetweenTurns(t *testing.T) {
	t.Parallel()
	const window = 1500
	var w *llm.Windows
	g := newRigWith(t, &bigTools{size: 1200}, withWindows(&w, 0),
		llmtest.WithWindow(window), llmtest.WithListedWindow(window), llmtest.WithScript(contextScript))
	c := g.create(false)
	for i := range 12 {
		msg := fmt.Sprintf("Question %d about the %s, with some context that makes it long enough to matter here", i, strings.Repeat("topic ", 10))
		if i%2 == 1 {
			msg = fmt.Sprintf("Turn %d: read a file for me", i)
		}
		noError(t, g.turn(c, msg))
	}
	for i, r := range g.fake.Requests() {
		if r.MaxTokens > 0 || !strings.Contains(r.Messages[0].Content, "SUMMARY") {
			continue
		}
		if len(r.Messages) < 2 || r.Messages[1].Role != "user" {
			t.Errorf("request %d: after the summary comes %+v, not a user message", i, r.Messages[1])
		}
	}
	hist := g.history(c)
	at := map[string]int{}
	for i, m := range hist {
		at[m.ID] = i
	}
	sums := summaries(hist)
	if len(sums) < 2 {
		t.Fatalf("%d compactions", len(sums))
	}
	for _, s := range sums {
		kept, ok1 := at[s.KeptID]
		first, ok2 := at[s.FirstID]
		last, ok3 := at[s.LastID]
		if !ok1 || !ok2 || !ok3 || hist[kept].Type != agent.MessageUser || hist[first].Type != agent.MessageUser || hist[last].Type != agent.MessageUser {
			t.Fatalf("summary span %+v", s)
		}
		if !(first <= last && last < kept) {
			t.Errorf("span first %d, last %d, kept %d", first, last, kept)
		}
		for _, m := range hist[last+1 : kept] {
			if m.Type == agent.MessageUser {
				t.Errorf("user message %s between the last summarized one and the first kept", m.ID)
			}
		}
		if want := agent.MessageText(hist[first]); !strings.HasPrefix(want, strings.TrimSuffix(s.FirstText, "…")) || s.FirstText == "" || len([]rune(s.FirstText)) > 41 {
			t.Errorf("first text %q of %q", s.FirstText, want)
		}
		if want := agent.MessageText(hist[last]); !strings.HasPrefix(want, strings.TrimSuffix(s.LastText, "…")) || s.LastText == "" {
			t.Errorf("last text %q of %q", s.LastText, want)
		}
	}
	// A later summary starts where the previous one kept.
	for i := 1; i < len(sums); i++ {
		if sums[i].FirstID != sums[i-1].KeptID {
			t.Errorf("summary %d starts at %s, the previous one kept from %s", i, sums[i].FirstID, sums[i-1].KeptID)
		}
	}
}
