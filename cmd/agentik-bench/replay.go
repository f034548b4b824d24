package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	_ "github.com/glebarez/go-sqlite" // the "sqlite" database/sql driver

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/store"
)

// seeded is the database of the replay and REST scenarios: one
// conversation with ReplayEvents stored events and RestConvs more
// conversations, written through the store as agentik writes them.
type seeded struct {
	path     string
	replayID string
	want     string // the replayed text
}

func (b *bench) seed(ctx context.Context) (seeded, error) {
	return b.seedIn(ctx, "seeded.db", "")
}

// seedIn writes the seeded database into file db of the run's directory,
// in the store's mode (""; AGENTIK_STORE_MODE's), once per run.
func (b *bench) seedIn(ctx context.Context, db string, mode store.Mode) (seeded, error) {
	if sd, ok := b.seeds[db]; ok {
		return sd, nil
	}
	sd := seeded{path: filepath.Join(b.dir, db), replayID: agent.NewID()}
	b.progress("seeding %d events and %d conversations into %s", b.sz.ReplayEvents, b.sz.RestConvs, db)
	st, err := store.Open(ctx, "sqlite:"+sd.path, store.Options{Mode: mode})
	if err != nil {
		return sd, err
	}
	defer st.Close()
	now := time.Now()
	// Distinct times, as real conversations have: the list's ORDER BY
	// updated_at then walks its index instead of sorting ties.
	created := func(id, title string, ago time.Duration) *agent.Record {
		at := now.Add(-ago)
		c := agent.Conversation{ID: id, Title: title, CreatedAt: at, UpdatedAt: at}
		return &agent.Record{
			Event:        agent.AllEvent{Kind: agent.KindAgent, ID: agent.NewID(), Date: now, ConversationID: id, Agent: &agent.AgentEvent{Type: agent.AgentCreated, ConversationID: id, Title: title}},
			Conversation: &c,
		}
	}
	if err := st.Append(ctx, created(sd.replayID, "replay", 0)); err != nil {
		return sd, err
	}
	n := b.sz.ReplayEvents
	for i := 1; i <= n; {
		var recs []*agent.Record
		for ; i <= n && len(recs) < 1000; i++ {
			text := fmt.Sprintf(" t%d", i)
			if i == 1 {
				text = "t1"
			}
			recs = append(recs, &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: now, ConversationID: sd.replayID,
				Event: &agent.Event{Type: agent.EventAppendText, Text: text}}})
		}
		if err := st.Append(ctx, recs...); err != nil {
			return sd, err
		}
	}
	if err := copyForBare(ctx, st, sd); err != nil {
		return sd, err
	}
	for i := 0; i < b.sz.RestConvs; {
		var recs []*agent.Record
		for ; i < b.sz.RestConvs && len(recs) < 100; i++ {
			recs = append(recs, created(agent.NewID(), fmt.Sprintf("conversation %d", i), time.Duration(i+1)*time.Minute))
		}
		if err := st.Append(ctx, recs...); err != nil {
			return sd, err
		}
	}
	sd.want = llmtest.Tokens(n)
	if b.seeds == nil {
		b.seeds = map[string]seeded{}
	}
	b.seeds[db] = sd
	return sd, nil
}

// bareEventTable holds a copy of the replayed conversation's events, one
// row each, for the bare SELECT: agentik keeps text deltas in its delta
// log beside the database (internal/store/deltalog.go), not as rows of
// agent_event, and the baseline is what reading the same events as SQLite
// rows costs.
const bareEventTable = "bench_bare_event"

// copyForBare reads the replayed conversation back through the store and
// writes it, as stored, into bareEventTable in one transaction.
func copyForBare(ctx context.Context, st *store.Store, sd seeded) error {
	evs, err := st.EncodedEvents(ctx, agent.EventQuery{ConversationID: sd.replayID})
	if err != nil {
		return fmt.Errorf("bare copy: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+sd.path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return fmt.Errorf("bare copy: %w", err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bare copy: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "CREATE TABLE "+bareEventTable+" (seq INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL, type TEXT NOT NULL, payload BLOB NOT NULL)"); err != nil {
		return fmt.Errorf("bare copy: %w", err)
	}
	for _, e := range evs {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+bareEventTable+" VALUES (?, ?, ?, ?)", e.Seq, e.ConversationID, e.Kind, e.JSON); err != nil {
			return fmt.Errorf("bare copy: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bare copy: %w", err)
	}
	return nil
}

// replay: every stored event of a conversation to one WebSocket client,
// until caught_up, against a bare SELECT of the same rows.
func (b *bench) replay(ctx context.Context) error {
	sd, err := b.seed(ctx)
	if err != nil {
		return err
	}
	t, err := b.agentik(ctx, "seeded.db")
	if err != nil {
		return err
	}
	defer t.Close()
	res, err := b.replayRounds(ctx, sd, t, "")
	if err != nil {
		return err
	}
	n := b.sz.ReplayEvents
	b.add(Row{Scenario: "replay", Metric: fmt.Sprintf("%d stored events → 1 WS client, to caught_up", n), Unit: "events/s", Bare: median(res.bareRate), Agentik: median(res.rate),
		Note: fmt.Sprintf("bare: SELECT of the same events as rows of a copy table (the text deltas are in agentik's delta log), via database/sql, same file; median of %d; agentik: %.2f s", b.sz.ReplayRounds, float64(n)/median(res.rate))}, nil)
	b.add(Row{Scenario: "replay", Metric: "CPU per replayed event (bare: the SELECT)", Unit: "µs", Bare: median(res.bareCPU), Agentik: median(res.serverCPU), Note: res.cpuNote(b)}, nil)
	return nil
}

// replayResult is what the replay's rounds measured, one value a round;
// CPU in µs per event.
type replayResult struct {
	bareRate, rate, bareCPU, serverCPU, clientCPU []float64
}

// cpuNote says how the CPU per event was measured.
func (r replayResult) cpuNote(b *bench) string {
	if b.inproc {
		return fmt.Sprintf("median of %d; in one process (profiling): agentik's figure includes the client", b.sz.ReplayRounds)
	}
	// CPU, unlike time, does not depend on what else the machine runs.
	return fmt.Sprintf("median of %d; the bench's client used %.2f µs per event", b.sz.ReplayRounds, median(r.clientCPU))
}

// replayRounds runs ReplayRounds rounds of the bare SELECT and agentik's
// replay of sd on t; what names t in the progress lines.
func (b *bench) replayRounds(ctx context.Context, sd seeded, t target, what string) (replayResult, error) {
	var res replayResult
	db, err := sql.Open("sqlite", "file:"+sd.path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return res, fmt.Errorf("bare select: %w", err)
	}
	defer db.Close()
	n := b.sz.ReplayEvents
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	for round := range b.sz.ReplayRounds {
		t0, self0 := time.Now(), selfCPU()
		rows, err := db.QueryContext(ctx, "SELECT payload FROM "+bareEventTable+" WHERE seq > ? AND conversation_id = ? AND type = ? ORDER BY seq", 0, sd.replayID, agent.KindConversation)
		if err != nil {
			return res, fmt.Errorf("bare select: %w", err)
		}
		got := 0
		var payload sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&payload); err != nil {
				rows.Close()
				return res, fmt.Errorf("bare select: %w", err)
			}
			got++
		}
		err = rows.Err()
		rows.Close()
		if err != nil || got != n {
			return res, fmt.Errorf("bare select: %d rows, want %d: %v", got, n, err)
		}
		res.bareRate = append(res.bareRate, float64(n)/time.Since(t0).Seconds())
		res.bareCPU = append(res.bareCPU, perEvent(selfCPU()-self0))

		s := newSink(sd.replayID, nil)
		t0, self0 = time.Now(), selfCPU()
		c0 := t.CPU()
		ws, err := watchWS(ctx, wsURL(t.URL(), "/agentik/ws"), s)
		if err != nil {
			return res, err
		}
		if _, err := ws.subscribe(ctx, "conversation", sd.replayID, 0); err != nil {
			ws.Close()
			return res, err
		}
		err = wait(ctx, s.caught, 5*time.Minute, "replay caught_up")
		el := time.Since(t0)
		res.serverCPU = append(res.serverCPU, perEvent(t.CPU()-c0))
		res.clientCPU = append(res.clientCPU, perEvent(selfCPU()-self0))
		ws.Close()
		if err != nil {
			return res, err
		}
		if s.events != n || s.text.String() != sd.want || s.disorder > 0 {
			return res, fmt.Errorf("replay: %d events, %d out of order, text exact %v; want %d events", s.events, s.disorder, s.text.String() == sd.want, n)
		}
		res.rate = append(res.rate, float64(n)/el.Seconds())
		b.progress("replay%s round %d: bare SELECT %.0f rows/s, agentik %.0f events/s to caught_up (%.2f s)", what, round+1, res.bareRate[round], res.rate[round], el.Seconds())
	}
	return res, nil
}
