package store

import (
	"fmt"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// BenchmarkConversations reads the first page (100) of 1000 conversations,
// as GET /agentik/conversations does.
func BenchmarkConversations(b *testing.B) {
	s := benchStore(b, Options{})
	recs := make([]*agent.Record, 0, 1000)
	for i := range 1000 {
		recs = append(recs, createdRec(fmt.Sprintf("conv-%04d", i), fmt.Sprintf("Conversation %d", i)))
	}
	if err := s.Append(b.Context(), recs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cs, total, err := s.Conversations(b.Context(), 0, 100)
		if err != nil || len(cs) != 100 || total != 1001 {
			b.Fatalf("%d of %d, %v", len(cs), total, err)
		}
	}
}
