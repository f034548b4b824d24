//go:build unix

package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// BenchmarkAppendOwners is the people scenario's writes: 100 conversations
// streaming at once, each commit a token of 20 of them, the conversations
// one user's or spread over 100 users. Both write the same rows; the
// difference is idx_event_owner_seq (owner, seq), which a member's replay
// reads (only theirs): one user's tokens all land on the index's one last
// leaf, 100 users' on up to one leaf each per commit, so a commit dirties
// and writes to the WAL about as many more pages as the
// (conversation_id, seq) index does. cpu-ns/event is the process's CPU per
// event (the checkpoints of those pages included). owners=100-unindexed
// drops the index first: what is left of the difference is not the
// index's.
func BenchmarkAppendOwners(b *testing.B) {
	for _, arm := range []struct {
		name      string
		owners    int
		unindexed bool
	}{{"owners=1", 1, false}, {"owners=100", 100, false}, {"owners=100-unindexed", 100, true}} {
		owners := arm.owners
		b.Run(arm.name, func(b *testing.B) {
			const convs, perCommit = 100, 20
			db := filepath.Join(b.TempDir(), "agentik.db")
			s, err := Open(context.Background(), "sqlite:"+db, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if arm.unindexed {
				if err := s.w.Exec("DROP INDEX idx_event_owner_seq").Error; err != nil {
					b.Fatal(err)
				}
			}
			ids := make([]string, convs)
			for i := range ids {
				ids[i] = fmt.Sprintf("c%03d", i)
				if err := s.Append(b.Context(), ownedRec(ids[i], "t", fmt.Sprintf("user-%03d", i%owners))); err != nil {
					b.Fatal(err)
				}
			}
			// Warm up: every conversation's index leaves exist.
			next := 0
			batch := func() {
				recs := make([]*agent.Record, 0, perCommit)
				for range perCommit {
					recs = append(recs, textRec(ids[next%convs], "tok "))
					next++
				}
				if err := s.Append(b.Context(), recs...); err != nil {
					b.Fatal(err)
				}
			}
			for range 200 {
				batch()
			}
			cpu0 := processCPU(b)
			b.ResetTimer()
			for range b.N {
				batch()
			}
			b.StopTimer()
			n := float64(b.N * perCommit)
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/n, "cpu-ns/event")
		})
	}
}
