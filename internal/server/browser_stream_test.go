package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/llm/llmtest"
)

// longAnswer is about n words of markdown in paragraphs, lists and code
// blocks, like a real long answer.
func longAnswer(n int) string {
	var b strings.Builder
	words := 0
	for i := 0; words < n; i++ {
		switch i % 5 {
		case 3:
			b.WriteString("```go\nfunc f" + fmt.Sprint(i) + "() int {\n\treturn " + fmt.Sprint(i) + "\n}\n```\n\n")
			words += 8
		case 4:
			b.WriteString("- first point\n- second point\n- third point\n\n")
			words += 9
		default:
			for j := 0; j < 40; j++ {
				fmt.Fprintf(&b, "w%d ", words)
				words++
			}
			b.WriteString("**end**.\n\n")
			words++
		}
	}
	return b.String()
}

// TestBrowserLongAnswerCostStaysFlat streams a 10k-token answer and checks
// that rendering a frame late in the answer costs about what an early frame
// did: the stream is rendered incrementally, not re-rendered whole (no
// O(n²)). The figures go to docs/BENCHMARKS.md.
func TestBrowserLongAnswerCostStaysFlat(t *testing.T) {
	ts := newTestServer(t)
	tab := newBrowser(t, ts).tab()
	openPage(t, ts, tab, "/")
	text := longAnswer(10000)
	ts.Fake.Enqueue(llmtest.Reply{Text: text, ChunkSize: 6, Delay: time.Millisecond})
	send(t, tab, "write a lot")
	waitJS(t, tab, "persisted long answer", jsAnswers+`.length === 1 && !document.querySelector('#live').children.length`)
	durs := eval[[]float64](t, tab, `performance.getEntriesByName('agentik:render').map((e) => e.duration)`)
	if len(durs) < 40 {
		t.Fatalf("only %d rendered frames", len(durs))
	}
	q := len(durs) / 4
	early, late := mean(durs[:q]), mean(durs[len(durs)-q:])
	t.Logf("%d frames; mean render per frame: first quarter %.3f ms, last quarter %.3f ms (ratio %.2f)", len(durs), early, late, late/early)
	// Whole re-rendering makes the last quarter several times the first;
	// the bound leaves room for a loaded machine.
	if late > 3*early+1 {
		t.Errorf("late frames cost %.3f ms against %.3f ms early: rendering grows with the answer", late, early)
	}
	if got := answerText(t, tab, 0); !strings.Contains(got, "w9999") {
		t.Errorf("the persisted answer lacks its end")
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
