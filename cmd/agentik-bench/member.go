package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/store"
)

// member: a member's replay of the all stream reads only their events. The
// log holds ReplayEvents events of the admin's conversation with a
// member's event after every 99 (1 %). The admin and the member each
// subscribe to the all stream from the start until caught_up; the member
// gets only theirs, and reading only theirs (the (owner, seq) index) makes
// their replay take about 1 % of the admin's time, where a scan of the
// whole log filtered by owner would take about as long as the admin's.
func (b *bench) member(ctx context.Context) error {
	if b.inproc {
		return fmt.Errorf("member runs agentik with accounts: run it without -cpuprofile/-trace")
	}
	db := filepath.Join(b.dir, "member.db")
	admin := "bench-admin-" + fmt.Sprint(time.Now().UnixNano())
	env := "AGENTIK_API_KEYS=" + admin
	t, err := startAgentik(ctx, b.bin, db, b.fake.URL, env)
	if err != nil {
		return err
	}
	var u struct{ ID string }
	var k struct{ Key string }
	err = b.postAs(ctx, t.URL()+"/agentik/users", admin, map[string]any{"name": "bench member"}, &u)
	if err == nil {
		err = b.postAs(ctx, t.URL()+"/agentik/users/"+u.ID+"/keys", admin, map[string]any{"name": "bench"}, &k)
	}
	var mine, theirs string
	if err == nil {
		mine, err = b.createConversationAs(ctx, t.URL(), "member's", k.Key)
	}
	if err == nil {
		theirs, err = b.createConversationAs(ctx, t.URL(), "admin's", admin)
	}
	t.Close()
	if err != nil {
		return fmt.Errorf("member setup: %w", err)
	}

	n := b.sz.ReplayEvents
	b.progress("member: seeding %d events, 1 %% of them the member's", n)
	st, err := store.Open(ctx, "sqlite:"+db, store.Options{})
	if err != nil {
		return err
	}
	memberEvents := 0
	for i := 1; i <= n; {
		var recs []*agent.Record
		for ; i <= n && len(recs) < 1000; i++ {
			conv := theirs
			if i%100 == 0 {
				conv = mine
				memberEvents++
			}
			recs = append(recs, &agent.Record{Event: agent.AllEvent{Kind: agent.KindConversation, ID: agent.NewID(), Date: time.Now(), ConversationID: conv,
				Event: &agent.Event{Type: agent.EventAppendText, Text: fmt.Sprintf(" t%d", i)}}})
		}
		if err := st.Append(ctx, recs...); err != nil {
			st.Close()
			return err
		}
	}
	if err := st.Close(); err != nil {
		return err
	}
	if t, err = startAgentik(ctx, b.bin, db, b.fake.URL, env); err != nil {
		return err
	}
	defer t.Close()

	replay := func(key string) (time.Duration, int64, error) {
		var events atomic.Int64
		caught := make(chan struct{})
		t0 := time.Now()
		ws, err := dialWSWith(ctx, wsURL(t.URL(), "/agentik/ws"), func(f *frame, _ time.Time) {
			switch f.Type {
			case protocol.FrameEvent:
				if f.Event != nil && f.Event.Kind == agent.KindConversation {
					events.Add(1)
				}
			case protocol.FrameCaughtUp:
				close(caught)
			}
		}, skimNone, key)
		if err != nil {
			return 0, 0, err
		}
		defer ws.Close()
		if _, err := ws.subscribe(ctx, "all", "", 0); err != nil {
			return 0, 0, err
		}
		if err := wait(ctx, caught, 5*time.Minute, "all-stream replay caught_up"); err != nil {
			return 0, 0, err
		}
		return time.Since(t0), events.Load(), nil
	}
	var adminT, memberT []float64
	for round := range b.sz.ReplayRounds {
		da, na, err := replay(admin)
		if err != nil {
			return fmt.Errorf("admin replay: %w", err)
		}
		dm, nm, err := replay(k.Key)
		if err != nil {
			return fmt.Errorf("member replay: %w", err)
		}
		if na != int64(n) || nm != int64(memberEvents) {
			return fmt.Errorf("member: the admin replayed %d conversation events (want %d), the member %d (want %d, theirs only)", na, n, nm, memberEvents)
		}
		adminT, memberT = append(adminT, da.Seconds()*1000), append(memberT, dm.Seconds()*1000)
		b.progress("member round %d: admin %d events in %.0f ms, member %d in %.1f ms", round+1, na, adminT[round], nm, memberT[round])
	}
	b.add(Row{Scenario: "member", Metric: fmt.Sprintf("all-stream replay of a %d-event log, 1 %% a member's (bare: the admin's whole replay)", n), Unit: "ms",
		Bare: median(adminT), Agentik: median(memberT), Target: "≤ 0.05×",
		Note: fmt.Sprintf("the member got their %d events only; a replay reading every row would take about the admin's time; median of %d", memberEvents, b.sz.ReplayRounds)},
		func(r Row) bool { return r.Ratio <= 0.05 })
	return nil
}
