package store

import (
	"hash/crc32"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// BenchmarkAppendPacedFanout is the durable mix inside the store: 100
// conversations each append a user message, then one append_text event
// every 20 ms (50 tokens/s, staggered), and every committed event wakes the goroutines of
// its conversation's pacedSubs subscribers, which each spend what a
// WebSocket or SSE writer spends on a delivery (a write(2) and a little
// CPU). It reports the latency from Append's call to the last subscriber's
// receipt (what a client of the mix sees, less the sockets), its p99 over
// the first and last 10 tokens of each turn (edge-p99: they queue with the
// other turns' starts and ends), the CPU per
// event, the rows per commit and the writer's time between taking a
// request and starting its commit (gather-µs: the group-commit window and
// what the writer waited behind).
func BenchmarkAppendPacedFanout(b *testing.B) { benchAppendPacedFanout(b, Options{Mode: ModeFast}) }

// BenchmarkAppendPacedFanoutPlain is BenchmarkAppendPacedFanout in plain
// mode (mode.go): what the speed layer buys the writer.
func BenchmarkAppendPacedFanoutPlain(b *testing.B) {
	benchAppendPacedFanout(b, Options{Mode: ModePlain})
}

func benchAppendPacedFanout(b *testing.B, opt Options) {
	const convs, perOp, every, pacedSubs = 100, 100, 20 * time.Millisecond, 3
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	type conv struct {
		sent  atomic.Int64 // UnixNano of the Append of its latest event
		early atomic.Bool  // that event is one of its turn's first or last 10
		subs  []chan []byte
	}
	cs := make(map[string]*conv, convs)
	ids := make([]string, convs)
	var (
		mu         sync.Mutex
		lat, early []time.Duration
		wg         sync.WaitGroup
	)
	for i := range ids {
		ids[i] = newID()
		c := &conv{}
		for range pacedSubs {
			ch := make(chan []byte, 64)
			c.subs = append(c.subs, ch)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine, first []time.Duration
				for p := range ch {
					// A delivery's work: build the frame, write it.
					var sum uint32
					for range 20 {
						sum = crc32.Update(sum, crc32.IEEETable, p)
					}
					_, _ = devnull.Write(p[:1+sum%uint32(len(p))])
					d := time.Duration(time.Now().UnixNano() - c.sent.Load())
					mine = append(mine, d)
					if c.early.Load() {
						first = append(first, d)
					}
				}
				mu.Lock()
				lat, early = append(lat, mine...), append(early, first...)
				mu.Unlock()
			}()
		}
		cs[ids[i]] = c
	}
	var ready atomic.Bool // deliveries counted once the conversations exist
	opt.Publish = func(evs []agent.Encoded) {
		if !ready.Load() {
			return
		}
		for _, ev := range evs {
			if c := cs[ev.ConversationID]; c != nil && ev.Type == agent.EventAppendText {
				for _, ch := range c.subs {
					select {
					case ch <- ev.JSON:
					default: // a subscriber behind by 64 events: not this benchmark's question
					}
				}
			}
		}
	}
	s := benchStore(b, opt)
	for _, cid := range ids {
		if err := s.Append(b.Context(), createdRec(cid, "paced")); err != nil {
			b.Fatal(err)
		}
	}
	ready.Store(true)
	batches0, records0 := s.wr.Stats.Batches, s.wr.Stats.Records
	gather0 := s.wr.Stats.Gather
	cpu0 := processCPU(b)
	b.ResetTimer()
	for b.Loop() {
		var apps sync.WaitGroup
		start := time.Now()
		for i, cid := range ids {
			apps.Go(func() {
				c := cs[cid]
				// The model's pace is the workload: conversation i's first
				// record goes i/convs of a token interval after the start,
				// then one token every interval (a timer, then a ticker).
				first := time.NewTimer(time.Until(start.Add(every * time.Duration(i) / convs)))
				defer first.Stop()
				// The turn starts with its user's message and ends with
				// the answer, as the runner writes them (BenchmarkCommitTurn):
				// 100 of each within one token interval, as in the mix.
				<-first.C
				tick := time.NewTicker(every)
				defer tick.Stop()
				start, end := turnRecs(cid)
				if err := s.Append(b.Context(), start); err != nil {
					b.Error(err)
					return
				}
				for k := range perOp {
					<-tick.C
					c.early.Store(k < 10 || k >= perOp-10)
					c.sent.Store(time.Now().UnixNano())
					if err := s.Append(b.Context(), textRec(cid, " t1")); err != nil {
						b.Error(err)
						return
					}
				}
				if err := s.Append(b.Context(), end); err != nil {
					b.Error(err)
				}
			})
		}
		apps.Wait()
	}
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	for _, c := range cs {
		for _, ch := range c.subs {
			close(ch)
		}
	}
	wg.Wait()
	n := int64(b.N) * convs * perOp
	batches := s.wr.Stats.Batches - batches0
	slices.Sort(lat)
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/event")
	b.ReportMetric(float64(s.wr.Stats.Records-records0)/float64(batches), "rows/batch")
	b.ReportMetric(float64(time.Duration(s.wr.Stats.Gather-gather0).Microseconds())/float64(batches), "gather-µs")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
	slices.Sort(early)
	b.ReportMetric(float64(early[len(early)*99/100].Microseconds()), "edge-p99-µs")
}

// turnRecs are the records that start and end a turn of cid.
func turnRecs(cid string) (start, end *agent.Record) {
	text := func(s string) []agent.Content { return []agent.Content{agent.Text(s)} }
	start = userRec(cid, "what is the weather like today", "")
	start.Turn = agent.TurnStart
	start.Memory = []agent.ModelMessage{{Role: "user", Content: text("what is the weather like today")}}
	end = convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
		Type: agent.MessageAssistant, ID: "msg-" + newID(), ConversationID: cid, Content: text("sunny, 21 degrees"),
	}})
	end.Turn = agent.TurnEnd
	end.Memory = []agent.ModelMessage{{Role: "assistant", Content: text("sunny, 21 degrees")}}
	end.Context = &agent.ContextSize{Tokens: 120, Window: 8192, Bytes: 480}
	return start, end
}
