package broker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// BenchmarkPublishToAllStreams: 1000 open all-streams (a team's sidebars)
// spread over 1 or 100 users, one event of one user's conversation per
// op, drained from the subscriptions it reaches. ns/op is the publish and
// the delivery; per-delivered divides it by the subscriptions reached
// (1000 with one user, 10 with 100). Indexed by owner, the 100-user case
// costs about what its 10 deliveries do; offered to every stream it cost
// a Match per open stream.
func BenchmarkPublishToAllStreams(b *testing.B) {
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			br := broker.New(nil, nil)
			ctx := context.Background()
			const subs = 1000
			byUser := make([][]*broker.Sub, users)
			for i := range subs {
				u := i % users
				p := agent.Principal{UserID: fmt.Sprint("user-", u), Role: agent.RoleMember}
				s, err := br.Subscribe(agent.WithPrincipal(ctx, p), broker.Stream{Kind: broker.StreamAll}, -1, "")
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				byUser[u] = append(byUser[u], s)
			}
			json := []byte(`{"kind":"conversation","type":"append_text","text":"tok"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				u := i % users
				owner := fmt.Sprint("user-", u)
				br.PublishEncoded([]agent.Encoded{{Seq: int64(i + 1), Kind: agent.KindConversation, ConversationID: "c-" + owner, Type: agent.EventAppendText, JSON: json, Owner: owner}})
				for _, s := range byUser[u] {
					if _, ok, err := s.TryNext(ctx); !ok || err != nil {
						b.Fatalf("subscription of %s: ok %v, err %v", owner, ok, err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(subs/users), "ns/delivered")
		})
	}
}
