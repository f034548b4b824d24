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

// BenchmarkEncodedReplayPage reads one conversation's events in pages of
// 1000, as a subscriber's replay from the database does (20,000 text
// events), on the event pool (eventscan.go) and through gorm on the read
// pool as before it; it reports the time and the process's CPU per event.
//
//	go test -run '^$' -bench EncodedReplayPage -benchtime 20x ./internal/store
func BenchmarkEncodedReplayPage(b *testing.B) {
	for _, path := range []struct {
		name string
		opt  Options
	}{{"pool", Options{}}, {"gorm", Options{gormReplay: true}}} {
		b.Run(path.name, func(b *testing.B) {
			s := benchStore(b, path.opt)
			if err := s.Append(b.Context(), createdRec("c", "replay")); err != nil {
				b.Fatal(err)
			}
			const n = 20_000
			for i := 0; i < n; {
				recs := make([]*agent.Record, 0, 1000)
				for ; i < n && len(recs) < 1000; i++ {
					recs = append(recs, textRec("c", fmt.Sprintf(" t%d", i)))
				}
				if err := s.Append(b.Context(), recs...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				got := 0
				for after := int64(0); ; {
					page, err := s.EncodedEvents(b.Context(), agent.EventQuery{After: after, ConversationID: "c", Limit: 1000})
					if err != nil {
						b.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					got += len(page)
					after = page[len(page)-1].Seq
				}
				if got != n {
					b.Fatalf("%d events, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
		})
	}
}
