package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// signalTools tells when each call starts.
type signalTools struct{ started chan time.Time }

func (s *signalTools) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "calc__add", Parameters: []byte(`{"type":"object"}`)}}
}

func (s *signalTools) Call(context.Context, string, string) (string, error) {
	s.started <- time.Now()
	return "42", nil
}

// hitlBench is a runner over SQLite in a temp dir and the fake model over
// HTTP, as an idle server runs it (built by app.Wire, as app.Run builds
// it), with a stored conversation subscribed.
func hitlBench(b *testing.B, tools agent.Tools, approval func(string) bool) (*llmtest.Server, *agent.Runner, agent.Conversation, *broker.Sub) {
	b.Helper()
	ctx := context.Background()
	fake, url := llmtest.NewHTTPServer(b, llmtest.WithModels("fake"))
	env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(b.TempDir(), "agentik.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn}
	w, err := app.Wire(ctx, settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{
		Tools:     tools,
		Configure: func(acfg *agent.Config, _ *server.Config) { acfg.Approval = approval },
	})
	if err != nil {
		b.Fatal(err)
	}
	a := w.App
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx, func(context.Context) error { return nil })
	})
	c, err := a.Runner.Create(ctx, agent.NewConversation{Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	sub, err := a.Broker.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: c.ID}, -1, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sub.Close)
	return fake, a.Runner, c, sub
}

// next waits for the next live event of type typ and returns when it
// arrived.
func next(b *testing.B, sub *broker.Sub, typ string) time.Time {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		it, err := sub.Next(ctx)
		if err != nil {
			b.Fatalf("waiting for %s: %v", typ, err)
		}
		if !it.CaughtUp && it.Event.Kind == agent.KindConversation && it.Event.Type == typ {
			return time.Now()
		}
	}
}

func reportLatency(b *testing.B, lat []time.Duration, what string) {
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.5), "p50_ms_"+what)
	b.ReportMetric(q(0.99), "p99_ms_"+what)
	b.ReportMetric(0, "ns/op") // the op is a whole turn; the quantiles are the figure
}

// BenchmarkApprovalToToolStart measures, on an idle server, the time from
// an approve decision to the start of the approved tool call (issue 13's
// goal: p99 ≤ 50 ms). The decision is stored, then the turn is rebuilt
// from the database and resumed.
func BenchmarkApprovalToToolStart(b *testing.B) {
	tools := &signalTools{started: make(chan time.Time, 1)}
	fake, r, c, sub := hitlBench(b, tools, func(name string) bool { return name == "calc__add" })
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		id := fmt.Sprint("call-", i)
		fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: id, Name: "calc__add", Arguments: `{}`}}})
		fake.Enqueue(llmtest.Reply{Text: "done"})
		if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add")}}); err != nil {
			b.Fatal(err)
		}
		next(b, sub, agent.EventApprovalRequest)
		start := time.Now()
		if err := r.Approve(ctx, c.ID, agent.ApprovalInput{CallID: id, Decision: agent.DecisionApprove}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-tools.started).Sub(start))
		next(b, sub, agent.EventEnd)
	}
	reportLatency(b, lat, "decision_to_tool")
}

// BenchmarkQueuedTurnStart measures the time from a turn's end to the start
// of the send queued behind it (its user message event), on an idle
// server (issue 13's goal: ≤ 20 ms).
func BenchmarkQueuedTurnStart(b *testing.B) {
	fake, r, c, sub := hitlBench(b, nil, nil)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		hold := make(chan struct{})
		fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
		fake.Enqueue(llmtest.Reply{Text: "second"})
		if _, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}}); err != nil {
			b.Fatal(err)
		}
		next(b, sub, agent.EventMessage) // the first user message
		res, err := r.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("two")}, OnBusy: agent.OnBusyQueue})
		if err != nil || !res.Queued {
			b.Fatalf("queued send: %+v %v", res, err)
		}
		close(hold)
		ended := next(b, sub, agent.EventEnd)
		lat = append(lat, next(b, sub, agent.EventMessage).Sub(ended))
		next(b, sub, agent.EventEnd)
	}
	reportLatency(b, lat, "end_to_queued_start")
}
