//go:build unix

package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/store"
)

// BenchmarkRevalidate is one recheck of the running requests' credentials
// (people.revalidate, every revalidateEvery while any runs): 1000 live
// WebSockets, each with its user's key, their users 1 or 100 (the bench's
// people scenario). It reads the users' standing in one query, so the two
// should cost about the same; one query per user made the recheck of 100
// users' sockets cost ~100 times one user's (7 % of the server's CPU in the
// people scenario's fan-out). cpu-ns/op is the process's CPU per recheck.
func BenchmarkRevalidate(b *testing.B) {
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "agentik.db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			p := &people{s: &Server{log: slog.New(slog.DiscardHandler)}, accounts: agent.NewAccounts(st, nil, nil), live: map[*liveReq]struct{}{}}
			creds := make([]cred, users)
			now := time.Now()
			for i := range creds {
				u := agent.User{ID: agent.NewID(), Name: fmt.Sprintf("user %d", i), Role: agent.RoleMember, CreatedAt: now}
				k := agent.Key{ID: agent.NewID(), UserID: u.ID, Name: "bench", CreatedAt: now}
				if err := st.CreateUser(ctx, u); err != nil {
					b.Fatal(err)
				}
				if err := st.CreateKey(ctx, k, agent.NewID()); err != nil {
					b.Fatal(err)
				}
				creds[i] = cred{user: u.ID, role: u.Role, keyID: k.ID}
			}
			fired := 0
			for i := range 1000 {
				p.live[&liveReq{cred: creds[i%users], revoke: func(string) { fired++ }}] = struct{}{}
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for range b.N {
				p.revalidate(ctx)
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if fired != 0 {
				b.Fatalf("%d valid requests were ended", fired)
			}
		})
	}
}
