package llm

import (
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// BenchmarkChatStream measures the raw throughput of the adapter: one
// 10,000-token answer per iteration, streamed by llmtest over loopback HTTP
// with no delay, one SSE chunk per token.
func BenchmarkChatStream(b *testing.B) {
	const tokens = 10000
	_, url := llmtest.NewHTTPServer(b)
	m := newModel(b, url)
	req := userText("[[tokens=10000]]")
	n := 0
	on := func(agent.Delta) error { n++; return nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Chat(b.Context(), req, on); err != nil {
			b.Fatal(err)
		}
	}
	if n != tokens*b.N {
		b.Fatalf("%d deltas, want %d", n, tokens*b.N)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
}
