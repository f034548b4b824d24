//go:build unix

package broker_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

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

// BenchmarkPublishConversationFanout is the people scenario's fan-out in
// the broker alone: 100 conversations, each watched by 10 conversation
// subscriptions of its owner, the owners one user or 100 (each
// subscription under its owner's principal, as each WebSocket is). One op
// publishes one event of one conversation and drains it from its 10
// subscriptions. Every event reaches 10 subscriptions either way, so
// ns/delivered is what the owner check and the per-owner indexes cost per
// delivery as the users grow: it should not.
func BenchmarkPublishConversationFanout(b *testing.B) {
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			br := broker.New(nil, nil)
			ctx := context.Background()
			const convs, per = 100, 10
			subs := make([][]*broker.Sub, convs)
			owners, ids := make([]string, convs), make([]string, convs)
			for c := range convs {
				owners[c], ids[c] = fmt.Sprint("user-", c%users), fmt.Sprint("c-", c)
				p := agent.Principal{UserID: owners[c], Role: agent.RoleMember}
				for range per {
					s, err := br.Subscribe(agent.WithPrincipal(ctx, p), broker.Stream{Kind: broker.StreamConversation, ConversationID: ids[c]}, -1, "")
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					subs[c] = append(subs[c], s)
				}
			}
			json := []byte(`{"kind":"conversation","type":"append_text","text":"tok"}`)
			evs := make([]agent.Encoded, 1)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for i := range b.N {
				c := i % convs
				evs[0] = agent.Encoded{Seq: int64(i + 1), Kind: agent.KindConversation, ConversationID: ids[c], Type: agent.EventAppendText, JSON: json, Owner: owners[c]}
				br.PublishEncoded(evs)
				for _, s := range subs[c] {
					if _, ok, err := s.TryNext(ctx); !ok || err != nil {
						b.Fatalf("subscription of c-%d: ok %v, err %v", c, ok, err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/per, "ns/delivered")
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N)/per, "cpu-ns/delivered")
		})
	}
}

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
