package server_test

import (
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// Speed goals of the browser UI, measured in headless Chromium (see
// docs/BENCHMARKS.md). The tests check what the UI does; these measure how
// fast. Run: go test -run '^$' -bench BenchmarkBrowser -benchtime 1x ./internal/server

// BenchmarkBrowserOpenLongConversation opens a 500-message conversation
// and reports, from navigation start, when the page was usable and when
// all its markdown was rendered. Goal: rendered-ms ≤ 1000.
func BenchmarkBrowserOpenLongConversation(b *testing.B) {
	ts := newTestServer(b)
	br := newBrowser(b, ts)
	id := seedConversation(b, ts, "Five hundred messages", 250)
	tab := br.tab()
	openPage(b, ts, tab, "/") // warm the browser and the bundle cache
	type timing struct{ DOMContentLoaded, Visible, Rendered float64 }
	var sum timing
	b.ResetTimer()
	for range b.N {
		openPage(b, ts, tab, "/c/"+id)
		waitJS(b, tab, "all markdown rendered", `document.querySelector('#main').dataset.rendered === 'true'`)
		tm := eval[timing](b, tab, `(() => {
			const nav = performance.getEntriesByType('navigation')[0];
			const mark = (n) => performance.getEntriesByName(n)[0]?.startTime ?? -1;
			return {DOMContentLoaded: nav.domContentLoadedEventEnd, Visible: mark('agentik:visible'), Rendered: mark('agentik:rendered')};
		})()`)
		if tm.Rendered < 0 {
			b.Fatal("no agentik:rendered mark")
		}
		sum.DOMContentLoaded += tm.DOMContentLoaded
		sum.Visible += tm.Visible
		sum.Rendered += tm.Rendered
	}
	n := float64(b.N)
	b.ReportMetric(sum.DOMContentLoaded/n, "domcontentloaded-ms")
	b.ReportMetric(sum.Visible/n, "visible-ms")
	b.ReportMetric(sum.Rendered/n, "rendered-ms")
}

// BenchmarkBrowserLongAnswerRender streams a 10k-word answer (6 characters
// per chunk, 1 ms apart) and reports the mean render time of a frame in
// the first and the last quarter of the answer. Goal: late ÷ early stays
// about 1 (incremental rendering); whole re-rendering makes it several.
func BenchmarkBrowserLongAnswerRender(b *testing.B) {
	ts := newTestServer(b)
	br := newBrowser(b, ts)
	text := longAnswer(10000)
	var early, late float64
	frames := 0
	for range b.N {
		tab := br.tab()
		openPage(b, ts, tab, "/")
		ts.Fake.Enqueue(llmtest.Reply{Text: text, ChunkSize: 6, Delay: time.Millisecond})
		send(b, tab, "write a lot")
		waitJS(b, tab, "persisted long answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
		durs := eval[[]float64](b, tab, `performance.getEntriesByName('agentik:render').map((e) => e.duration)`)
		if len(durs) < 8 {
			b.Fatalf("only %d rendered frames", len(durs))
		}
		q := len(durs) / 4
		early += mean(durs[:q])
		late += mean(durs[len(durs)-q:])
		frames += len(durs)
	}
	n := float64(b.N)
	b.ReportMetric(float64(frames)/n, "frames")
	b.ReportMetric(early/n, "early-frame-ms")
	b.ReportMetric(late/n, "late-frame-ms")
	b.ReportMetric(late/early, "late/early")
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
