package telemetry_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/telemetry"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurn runs whole turns (a tool call, then a 50-token answer)
// against the fake model, bare and with metrics, the turn watcher and
// tracing on (exported over OTLP/HTTP to an in-process receiver), and
// reports the process CPU per turn: the cost telemetry adds.
func BenchmarkTurn(b *testing.B) {
	for _, observed := range []bool{false, true} {
		name := "bare"
		if observed {
			name = "observed"
		}
		b.Run(name, func(b *testing.B) {
			fake, url := llmtest.NewHTTPServer(b)
			var m *telemetry.Metrics
			a, err := app.Open(context.Background(), app.Config{DB: "sqlite:" + filepath.Join(b.TempDir(), "a.db"),
				Committed: func(n int) {
					if m != nil {
						m.Appended(n)
					}
				}})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close(context.Background())
			model, _ := llm.New(llm.Config{BaseURL: url, Model: "fake"})
			var tl fakeTools
			cfg := agent.Config{Model: model, Tools: tl}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			close(done)
			if observed {
				col := httptest.NewServer(&otlpReceiver{})
				defer col.Close()
				tr, err := telemetry.NewTracing(ctx, func(k string) string {
					if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
						return col.URL
					}
					return ""
				}, "")
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Shutdown(context.Background())
				m = telemetry.NewMetrics(telemetry.Sources{Subscriptions: a.Broker.Subscribers, Drops: a.Broker.Drops})
				var tracer trace.Tracer = tr.Tracer()
				tel := telemetry.New(telemetry.Options{Metrics: m, Tracer: tracer})
				cfg.Model, cfg.Tools, cfg.TurnContext = tel.Model(model, "fake"), tel.Tools(tl, tl.Servers), tel.TurnContext
				done = make(chan struct{})
				go func() { defer close(done); m.WatchTurns(ctx, a.Broker) }()
			}
			defer func() { stop(); <-done }()
			if err := a.Start(context.Background(), cfg, server.Config{}); err != nil {
				b.Fatal(err)
			}
			r := a.Runner
			c, err := r.CreateConversation(context.Background(), "b", false)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := cpuTime()
			for range b.N {
				fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c", Name: "fs__read", Arguments: "{}"}}})
				fake.Enqueue(llmtest.Reply{Text: llmtest.Tokens(50)})
				if _, err := r.Send(context.Background(), c.ID, []agent.Content{agent.Text("go")}, ""); err != nil {
					b.Fatal(err)
				}
				for {
					cv, _ := r.Conversation(context.Background(), c.ID)
					if !cv.Running {
						break
					}
					time.Sleep(200 * time.Microsecond)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/turn")
		})
	}
}
