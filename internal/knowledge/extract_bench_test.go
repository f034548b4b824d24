package knowledge_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentik/agentik/internal/knowledge"
	"github.com/agentik/agentik/internal/knowledge/knowledgetest"
)

// BenchmarkExtractPDF extracts a 1,000-page text PDF (12 lines a page):
// the bare baseline of ingestion, in pages/s (docs/BENCHMARKS.md).
func BenchmarkExtractPDF(b *testing.B) {
	pages := make([]string, 1000)
	for i := range pages {
		s := ""
		for l := range 12 {
			s += fmt.Sprintf("Section %d, line %d: the handbook says what every member should know about rule %d.\n", i, l, i*l)
		}
		pages[i] = s
	}
	pdf := knowledgetest.PDF(pages...)
	b.SetBytes(int64(len(pdf)))
	for b.Loop() {
		if _, err := (knowledge.Extractor{}).Extract(context.Background(), "big.pdf", knowledge.TypePDF, pdf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pages)*b.N)/b.Elapsed().Seconds(), "pages/s")
}
