package store

import (
	"encoding/json"
	"fmt"

	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// benchAppenders is how many goroutines append at once in
// BenchmarkAppendGroupCommit, and the transaction size of
// BenchmarkBareBatchedInsert: a batch can never hold more requests than
// there are appenders, so the bare insert gets batches at least as large.
const benchAppenders = 64

func benchStore(b *testing.B, opt Options) *Store {
	b.Helper()
	s, err := Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	if err := s.Append(b.Context(), createdRec("c1", "bench")); err != nil {
		b.Fatal(err)
	}
	return s
}

// tokenEvent is the small append_text event both write benchmarks store.
func tokenEvent(n int64) agent.AllEvent {
	return agent.AllEvent{
		Kind: agent.KindConversation, ID: fmt.Sprintf("ev-%d", n), ConversationID: "c1",
		Event: &agent.Event{Type: agent.EventAppendText, Text: "token "},
	}
}

// BenchmarkAppendGroupCommit appends one append_text event per Append from
// benchAppenders goroutines on SQLite; the writer group-commits them.
func BenchmarkAppendGroupCommit(b *testing.B) {
	s := benchStore(b, Options{Publish: func([]agent.Encoded) {}})
	var n atomic.Int64
	b.SetParallelism(max(1, benchAppenders/runtime.GOMAXPROCS(0))) // benchAppenders goroutines in all
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := &agent.Record{Event: tokenEvent(n.Add(1))}
			if err := s.Append(b.Context(), rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	// The writer's counters are safe to read: every Append has returned.
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(s.wr.Stats.Records)/float64(s.wr.Stats.Batches), "rows/batch")
}

// BenchmarkBareBatchedInsert inserts the same rows as
// BenchmarkAppendGroupCommit (encoded event, seq, id, created_at) with plain
// gorm CreateInBatches, benchAppenders rows per transaction, from one
// goroutine: the ceiling the writer is measured against.
func BenchmarkBareBatchedInsert(b *testing.B) {
	s := benchStore(b, Options{})
	seq := s.wr.Last()
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		size := min(benchAppenders, b.N-done)
		rows := make([]eventRow, size)
		for i := range rows {
			seq++
			ev := tokenEvent(seq)
			ev.Seq, ev.Date = seq, time.Now().UTC()
			payload, err := json.Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			cid := ev.ConversationID
			rows[i] = eventRow{Seq: seq, ID: ev.ID, ConversationID: &cid, CreatedAt: ev.Date, Type: ev.Kind, Payload: string(payload)}
		}
		if err := s.w.Transaction(func(tx *gorm.DB) error {
			return tx.CreateInBatches(rows, insertChunk).Error
		}); err != nil {
			b.Fatal(err)
		}
		done += size
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
}

// BenchmarkReplay100k reads 100,000 stored events (90% append_text, 10%
// user messages) through Events in pages of 1000, as a resuming subscriber
// does. One op is the whole replay.
func BenchmarkReplay100k(b *testing.B) {
	const total, page = 100_000, 1000
	s := benchStore(b, Options{})
	var recs []*agent.Record
	for i := range total - 1 { // plus the created event
		if i%10 == 9 {
			recs = append(recs, userRec("c1", "a question of a few words", ""))
		} else {
			recs = append(recs, textRec("c1", "token "))
		}
		if len(recs) == 1000 || i == total-2 {
			if err := s.Append(b.Context(), recs...); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	for b.Loop() {
		n, after := 0, int64(0)
		for {
			evs, err := s.Events(b.Context(), agent.EventQuery{After: after, Limit: page})
			if err != nil {
				b.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			n += len(evs)
			after = evs[len(evs)-1].Seq
		}
		if n != total {
			b.Fatalf("replayed %d events, want %d", n, total)
		}
	}
	b.ReportMetric(float64(total), "events/op")
}

// BenchmarkAppendLatency appends one append_text event at a time from one
// goroutine: ns/op is the latency an Append adds to a token on an idle
// store (DESIGN.md §4: single milliseconds at most).
func BenchmarkAppendLatency(b *testing.B) {
	s := benchStore(b, Options{Publish: func([]agent.Encoded) {}})
	var n int64
	for b.Loop() {
		n++
		if err := s.Append(b.Context(), &agent.Record{Event: tokenEvent(n)}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPostgres opens a store on a fresh schema of the test PostgreSQL
// server, with the created event of conversation c1 stored.
func benchPostgres(b *testing.B, opt Options) (*Store, string) {
	b.Helper()
	dsn := postgresSchema(b)
	s, err := Open(b.Context(), dsn, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	if err := s.Append(b.Context(), createdRec("c1", "bench")); err != nil {
		b.Fatal(err)
	}
	return s, dsn
}

// BenchmarkPostgresAppendGroupCommit is BenchmarkAppendGroupCommit on
// PostgreSQL (advisory lock, pg_notify).
func BenchmarkPostgresAppendGroupCommit(b *testing.B) {
	s, _ := benchPostgres(b, Options{Publish: func([]agent.Encoded) {}})
	var n atomic.Int64
	b.SetParallelism(max(1, benchAppenders/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Append(b.Context(), &agent.Record{Event: tokenEvent(n.Add(1))}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(s.wr.Stats.Records)/float64(s.wr.Stats.Batches), "rows/batch")
}

// BenchmarkPostgresAppendLatency is BenchmarkAppendLatency on PostgreSQL:
// one Append at a time, published by the instance that wrote it.
func BenchmarkPostgresAppendLatency(b *testing.B) {
	s, _ := benchPostgres(b, Options{Publish: func([]agent.Encoded) {}})
	var n int64
	for b.Loop() {
		n++
		if err := s.Append(b.Context(), &agent.Record{Event: tokenEvent(n)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCrossInstanceLatency measures how long an event takes from one
// instance to another on one PostgreSQL database: one op is an Append on
// instance b, then the wait until instance a, which appends nothing,
// publishes it (NOTIFY, then a's listener reads it). ns/op is the whole
// op; the metric after-append-µs is what a adds after b's Append returned
// (negative when a published first).
func BenchmarkCrossInstanceLatency(b *testing.B) {
	seen := make(chan int64, 1024)
	publish := func(evs []agent.Encoded) {
		for _, ev := range evs {
			seen <- ev.Seq
		}
	}
	sb, dsn := benchPostgres(b, Options{})
	sa, err := Open(b.Context(), dsn, Options{Publish: publish})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := sa.Close(); err != nil {
			b.Error(err)
		}
	})
	var (
		n     int64
		after time.Duration
	)
	for b.Loop() {
		n++
		rec := &agent.Record{Event: tokenEvent(n)}
		if err := sb.Append(b.Context(), rec); err != nil {
			b.Fatal(err)
		}
		appended := time.Now()
		for seq := range seen {
			if seq == rec.Event.Seq {
				break
			}
		}
		after += time.Since(appended)
	}
	b.ReportMetric(float64(after.Microseconds())/float64(b.N), "after-append-µs")
}

// BenchmarkAppendPaced is the write load of agentik-bench's mix: 100
// conversations, each appending one append_text event (a fresh random
// id) every 20 ms (50 tokens/s) and waiting for it, as a turn's emit
// loop does. One op is 100 events per conversation (2 s). It reports the
// process's CPU time per event (the writer's, nearly all of it), the
// rows per transaction, the Append latency, and the WAL tails the writer
// checkpointed and how long they held it.
func BenchmarkAppendPaced(b *testing.B) {
	const convs, perOp, every = 100, 100, 20 * time.Millisecond
	s := benchStore(b, Options{Publish: func([]agent.Encoded) {}})
	ids := make([]string, convs)
	for i := range ids {
		ids[i] = newID()
		if err := s.Append(b.Context(), createdRec(ids[i], "paced")); err != nil {
			b.Fatal(err)
		}
	}
	batches0, records0 := s.wr.Stats.Batches, s.wr.Stats.Records
	st0 := s.ckpt.Stats()
	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	cpu0 := processCPU(b)
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		start := time.Now()
		for i, cid := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, perOp)
				next := start.Add(every * time.Duration(i) / convs)
				for range perOp {
					time.Sleep(time.Until(next))
					next = next.Add(every)
					t0 := time.Now()
					rec := textRec(cid, " t1")
					if err := s.Append(b.Context(), rec); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	n := int64(b.N) * convs * perOp
	slices.Sort(lat)
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/event")
	b.ReportMetric(float64(s.wr.Stats.Records-records0)/float64(s.wr.Stats.Batches-batches0), "rows/batch")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	// The writer's WAL tails (checkpoint.go): each stalls every Append.
	st := s.ckpt.Stats()
	b.ReportMetric(float64(st.Tails-st0.Tails)/float64(b.N), "tails/op")
	b.ReportMetric(float64((st.Stall-st0.Stall).Milliseconds())/float64(b.N), "tail-ms/op")
}

// processCPU is the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCommit is the writer's commit alone, without the queue: one op
// commits one batch of the sub-benchmark's size, each request one
// append_text event of one of 100 conversations (the mix's shape), as the
// writer goroutine does (Writer.Commit: the commit, then the checkpointer's kick). rows=8 is
// about what a group commit holds at the mix's 50 tokens/s, rows=512 a
// full batch. It reports the process's CPU time per event (the
// checkpointer's included) beside ns/event.
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1, 8, 64, 512} {
		b.Run(fmt.Sprintf("rows=%d", size), func(b *testing.B) {
			benchCommit(b, benchStore(b, Options{Publish: func([]agent.Encoded) {}}), size)
		})
	}
}

// BenchmarkCommitIndexCost is BenchmarkCommit at the mix's batch sizes
// with every index of agent_event, without one of them, and without all:
// what each costs per token when 100 conversations stream at once
// (docs/ARCHITECTURE.md says why each stays; a conversation's entries are
// not among them: event_conversation, convindex.go).
func BenchmarkCommitIndexCost(b *testing.B) {
	for _, size := range []int{8, 64} {
		for _, drop := range []string{"", "idx_agent_event_id", "idx_event_owner_seq", "all"} {
			name := fmt.Sprintf("rows=%d/all_indexes", size)
			if drop != "" {
				name = fmt.Sprintf("rows=%d/without_%s", size, drop)
			}
			b.Run(name, func(b *testing.B) {
				s := benchStore(b, Options{Publish: func([]agent.Encoded) {}})
				drops := []string{drop}
				if drop == "all" {
					drops = []string{"idx_agent_event_id", "idx_event_owner_seq"}
				}
				for _, d := range drops {
					if d == "" {
						continue
					}
					if err := s.w.Exec("DROP INDEX " + d).Error; err != nil {
						b.Fatal(err)
					}
				}
				benchCommit(b, s, size)
			})
		}
	}
}

// BenchmarkPostgresCommit is BenchmarkCommit on PostgreSQL.
func BenchmarkPostgresCommit(b *testing.B) {
	for _, size := range []int{1, 8, 64, 512} {
		b.Run(fmt.Sprintf("rows=%d", size), func(b *testing.B) {
			s, _ := benchPostgres(b, Options{Publish: func([]agent.Encoded) {}})
			benchCommit(b, s, size)
		})
	}
}

func benchCommit(b *testing.B, s *Store, size int) {
	const convs = 100
	ids := make([]string, convs)
	for i := range ids {
		ids[i] = newID()
		if err := s.Append(b.Context(), createdRec(ids[i], "commit")); err != nil {
			b.Fatal(err)
		}
	}
	// The writer goroutine waits on its queue: this one is the writer now
	// (the answer to the last Append ordered its state before this).
	batch := make([]*request, size)
	n := 0
	cpu0 := processCPU(b)
	start := time.Now()
	for b.Loop() {
		for i := range batch {
			batch[i] = eventlog.NewRequest([]*agent.Record{textRec(ids[n%convs], " t1")})
			n++
		}
		s.wr.Commit(batch)
		for _, r := range batch {
			if err := r.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/event")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/event")
}

// BenchmarkCommitTurn is the writer's commit of the records of one turn of
// a stored conversation, without the queue: the user's message that starts
// the turn with its working memory, then the assistant's answer with its
// memory, the context size and the turn's end, two commits as the runner
// makes them, in turn in 100 conversations. The append_text rows of
// BenchmarkCommit touch no conversation row; these run the writer's
// per-message statements (the message and its search document, the head it
// follows, the memory's next index and rows, the conversation's updates).
// cpu-µs/turn is the process CPU per turn.
func BenchmarkCommitTurn(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchCommitTurn(b, benchStore(b, Options{Publish: func([]agent.Encoded) {}}))
	})
	b.Run("postgres", func(b *testing.B) {
		s, _ := benchPostgres(b, Options{Publish: func([]agent.Encoded) {}})
		benchCommitTurn(b, s)
	})
}

func benchCommitTurn(b *testing.B, s *Store) {
	const convs = 100
	ids := make([]string, convs)
	for i := range ids {
		ids[i] = newID()
		if err := s.Append(b.Context(), createdRec(ids[i], "turn")); err != nil {
			b.Fatal(err)
		}
	}
	commit := func(rec *agent.Record) {
		r := eventlog.NewRequest([]*agent.Record{rec})
		s.wr.Commit([]*request{r})
		if err := r.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	text := func(s string) []agent.Content { return []agent.Content{agent.Text(s)} }
	n := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		cid := ids[n%convs]
		n++
		user := userRec(cid, "what is the weather like today", "")
		user.Turn = agent.TurnStart
		user.Memory = []agent.ModelMessage{{Role: "user", Content: text("what is the weather like today")}}
		commit(user)
		answer := convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
			Type: agent.MessageAssistant, ID: "msg-" + newID(), ConversationID: cid, Content: text("sunny, 21 degrees"),
		}})
		answer.Turn = agent.TurnEnd
		answer.Memory = []agent.ModelMessage{{Role: "assistant", Content: text("sunny, 21 degrees")}}
		answer.Context = &agent.ContextSize{Tokens: 120, Window: 8192, Bytes: 480}
		commit(answer)
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(n), "cpu-µs/turn")
}

// BenchmarkCommitHistory is the writer's commit of a conversation's
// creation with a history of 20 messages, each with its working memory, in
// one request (an import's shape, and a stateless request's seeded history
// were temp conversations stored): each message follows the one before it
// and its memory comes after the one before. cpu-µs/op is the process CPU
// per request.
func BenchmarkCommitHistory(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchCommitHistory(b, benchStore(b, Options{Publish: func([]agent.Encoded) {}}))
	})
	b.Run("postgres", func(b *testing.B) {
		s, _ := benchPostgres(b, Options{Publish: func([]agent.Encoded) {}})
		benchCommitHistory(b, s)
	})
}

func benchCommitHistory(b *testing.B, s *Store) {
	const history = 20
	n := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		cid := newID()
		recs := []*agent.Record{createdRec(cid, "history")}
		for i := range history {
			text := fmt.Sprintf("earlier message %d of the history", i)
			typ, role := agent.MessageUser, "user"
			if i%2 == 1 {
				typ, role = agent.MessageAssistant, "assistant"
			}
			rec := convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
				Type: typ, ID: "msg-" + newID(), ConversationID: cid, Content: []agent.Content{agent.Text(text)},
			}})
			rec.Memory = []agent.ModelMessage{{Role: role, Content: []agent.Content{agent.Text(text)}}}
			recs = append(recs, rec)
		}
		r := eventlog.NewRequest(recs)
		s.wr.Commit([]*request{r})
		if err := r.Wait(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(n), "cpu-µs/op")
}

// BenchmarkCommitLifecycle is a stateless request's store work on a stored
// conversation: one commit creating the conversation with the user's
// message, its memory and the turn's start; the turn's reads (the
// conversation, its memory); one commit of the answer, its memory, context
// and the turn's end; the delete (its events redacted). It covers the
// statements a one-message request runs beside BenchmarkCommitTurn's:
// the conversation's INSERT and DELETE, the redaction, the reads.
// cpu-µs/op is the process CPU per request.
func BenchmarkCommitLifecycle(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchCommitLifecycle(b, benchStore(b, Options{Publish: func([]agent.Encoded) {}}))
	})
	b.Run("postgres", func(b *testing.B) {
		s, _ := benchPostgres(b, Options{Publish: func([]agent.Encoded) {}})
		benchCommitLifecycle(b, s)
	})
}

func benchCommitLifecycle(b *testing.B, s *Store) {
	commit := func(recs ...*agent.Record) {
		r := eventlog.NewRequest(recs)
		s.wr.Commit([]*request{r})
		if err := r.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	text := func(s string) []agent.Content { return []agent.Content{agent.Text(s)} }
	ctx := b.Context()
	n := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		cid := newID()
		user := userRec(cid, "hello there", "")
		user.Turn = agent.TurnStart
		user.Memory = []agent.ModelMessage{{Role: "user", Content: text("hello there")}}
		commit(createdRec(cid, "hello there"), user)
		if _, err := s.Conversation(ctx, cid); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Memory(ctx, cid); err != nil {
			b.Fatal(err)
		}
		answer := convRec(cid, &agent.Event{Type: agent.EventMessage, Message: &agent.Message{
			Type: agent.MessageAssistant, ID: "msg-" + newID(), ConversationID: cid, Content: text("hi"),
		}})
		answer.Turn = agent.TurnEnd
		answer.Memory = []agent.ModelMessage{{Role: "assistant", Content: text("hi")}}
		answer.Context = &agent.ContextSize{Tokens: 20, Window: 8192, Bytes: 80}
		commit(answer)
		if _, err := s.Conversation(ctx, cid); err != nil {
			b.Fatal(err)
		}
		commit(deletedRec(cid))
		n++
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(n), "cpu-µs/op")
}
