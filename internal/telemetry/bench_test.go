package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurn runs whole turns (a tool call, then a 50-token answer)
// against the fake model, on the server app.Wire builds for app.Run: bare
// (the runner's model, tools and turns undecorated; the turns are counted
// from the commits in both) and observed (metrics and tracing on, exported
// over OTLP/HTTP to an in-process receiver, as Run runs them), and reports
// the process CPU per turn: the cost telemetry adds.
func BenchmarkTurn(b *testing.B) {
	for _, observed := range []bool{false, true} {
		name := "bare"
		if observed {
			name = "observed"
		}
		b.Run(name, func(b *testing.B) {
			fake, url := llmtest.NewHTTPServer(b, llmtest.WithModels("fake"))
			env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
			if observed {
				col := httptest.NewServer(&otlpReceiver{})
				defer col.Close()
				env["OTEL_EXPORTER_OTLP_ENDPOINT"] = col.URL
			}
			var tl fakeTools
			hooks := app.Hooks{Tools: tl, ToolLister: tl}
			if !observed {
				hooks.Configure = func(acfg *agent.Config, _ *server.Config) {
					acfg.Model = acfg.Catalog.(agent.Model) // the model Wire decorates
					acfg.Tools, acfg.ContentTools, acfg.TurnContext = tl, nil, nil
				}
			}
			settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(b.TempDir(), "a.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn}
			w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, hooks)
			if err != nil {
				b.Fatal(err)
			}
			a := w.App
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = w.Shutdown(ctx, func(context.Context) error { return nil }) // flushes the traces
			}()
			r := a.Runner
			c, err := r.Create(context.Background(), agent.NewConversation{Title: "b"})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := cpuTime()
			for range b.N {
				fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c", Name: "fs__read", Arguments: "{}"}}})
				fake.Enqueue(llmtest.Reply{Text: llmtest.Tokens(50)})
				if _, err := r.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("go")}}); err != nil {
					b.Fatal(err)
				}
				for {
					cv, _ := a.Conversations.Get(context.Background(), c.ID)
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
