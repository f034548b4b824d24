package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/store"
)

// storeModes are the store's two modes on SQLite (docs/store.md), the
// speed layer's first.
var storeModes = []store.Mode{store.ModeFast, store.ModePlain}

// envMode is the store's mode agentik runs in when the bench names none:
// AGENTIK_STORE_MODE of the bench's environment, passed on to the child,
// or the default.
func envMode() store.Mode {
	m, err := store.ParseMode(os.Getenv(store.ModeEnv))
	if err != nil {
		return store.Mode(os.Getenv(store.ModeEnv)) // the child refuses it at start
	}
	return m
}

// modeEnv is the environment entry that runs a child agentik in mode m.
func modeEnv[M ~string](m M) string { return store.ModeEnv + "=" + string(m) }

// checkMode fails unless the SQLite database at path was run in mode m:
// fast mode keeps a delta log beside it (DB-deltas, made at open), plain
// mode writes no segment of one. It catches a child that did not get
// the mode the bench meant to measure.
func checkMode(path string, m store.Mode) error {
	ents, err := os.ReadDir(path + "-deltas")
	switch {
	case m == store.ModeFast && err != nil:
		return fmt.Errorf("%s: no delta log beside it: not run in fast mode (%v)", filepath.Base(path), err)
	case m == store.ModePlain:
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".log") {
				return fmt.Errorf("%s: a delta log segment %s: not run in plain mode", filepath.Base(path), e.Name())
			}
		}
	}
	return nil
}

// modes: the store's two modes side by side in one run, each beside the
// same bare baseline: the relay (one stream at full speed), the mix and
// the replay. The mix scenario, just before in a default run, measured
// the bare relay and the environment's mode; this one measures the other
// mode, so the three mix runs are back to back.
func (b *bench) modes(ctx context.Context) error {
	if err := b.modesRelay(ctx); err != nil {
		return err
	}
	if err := b.modesMix(ctx); err != nil {
		return err
	}
	return b.modesReplay(ctx)
}

// modesRelay runs the relay's rounds on an agentik of each mode, the bare
// read of the same answer first in each round; or takes the rounds the
// relay scenario ran for it in this run.
func (b *bench) modesRelay(ctx context.Context) error {
	n := b.sz.RelayTokens
	rm := b.relayModes
	if rm != nil {
		b.progress("modes relay: the relay scenario's rounds")
	} else {
		var err error
		if rm, err = b.modesRelayRounds(ctx); err != nil {
			return err
		}
	}
	for _, m := range storeModes {
		if err := checkMode(filepath.Join(b.dir, rm.dbs[m]), m); err != nil {
			return err
		}
	}
	add := b.add
	if b.relayModes != nil {
		add = func(r Row, pass func(Row) bool) { b.addFrom("relay", r, pass) }
	}
	bareRate, bareCPU := rm.bareRate, rm.bareCPU
	rate, cpu := map[store.Mode][]float64{}, map[store.Mode][]float64{}
	for m, runs := range rm.runs {
		for _, r := range runs {
			rate[m], cpu[m] = append(rate[m], r.rate), append(cpu[m], r.cpu)
		}
	}
	for _, m := range storeModes {
		add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: relay throughput, 1 stream → 1 WS client", m), Unit: "tokens/s", Bare: median(bareRate), Agentik: median(rate[m]),
			Note: fmt.Sprintf("%d tokens at full speed, median of %d; bare: go-openai reading the model; text, persisted message and resume exact", n, b.sz.RelayRounds)}, nil)
		add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: relay CPU per token, all processes", m), Unit: "µs", Bare: median(bareCPU), Agentik: median(cpu[m]),
			Note: "both include the fake model"}, nil)
	}
	return nil
}

// modesRelayRounds runs the relay's rounds on an agentik of each mode,
// the bare read of the same answer first in each round, the modes' order
// alternated.
func (b *bench) modesRelayRounds(ctx context.Context) (*relayModes, error) {
	n := b.sz.RelayTokens
	rm := &relayModes{runs: map[store.Mode][]relayRun{}, dbs: map[store.Mode]string{}}
	rls := map[store.Mode]*relayTarget{}
	defer func() {
		for _, rl := range rls {
			rl.close()
		}
	}()
	for _, m := range storeModes {
		db := "modes-relay-" + string(m) + ".db"
		rl, err := b.startRelay(ctx, db, modeEnv(m))
		if err != nil {
			return nil, err
		}
		rls[m], rm.dbs[m] = rl, db
	}
	for round := range b.sz.RelayRounds {
		r, c, err := b.direct(ctx, n, fmt.Sprintf("modes-bare-%d", round))
		if err != nil {
			return nil, err
		}
		rm.bareRate, rm.bareCPU = append(rm.bareRate, r), append(rm.bareCPU, c)
		order := storeModes
		if round%2 == 1 { // a drift in the machine's load weighs on both
			order = []store.Mode{store.ModePlain, store.ModeFast}
		}
		for _, m := range order {
			res, err := b.relayOnce(ctx, rls[m], n)
			if err != nil {
				return nil, fmt.Errorf("%s mode: %w", m, err)
			}
			rm.runs[m] = append(rm.runs[m], res)
		}
		b.progress("modes relay round %d: bare %.0f, fast %.0f, plain %.0f tokens/s", round+1, r, rm.runs[store.ModeFast][round].rate, rm.runs[store.ModePlain][round].rate)
	}
	return rm, nil
}

// modesMix runs the mix on the bare relay and on agentik in each mode,
// taking the runs the mix scenario made in this run.
func (b *bench) modesMix(ctx context.Context) error {
	runs := map[string]loadResult{}
	for _, side := range []string{"bare", string(store.ModeFast), string(store.ModePlain)} {
		if r, ok := b.mixRuns[side]; ok {
			b.progress("modes mix %s: the mix scenario's run", side)
			runs[side] = r
			continue
		}
		r, err := b.mixOn(ctx, side)
		if err != nil {
			return err
		}
		runs[side] = r
	}
	bare := runs["bare"]
	n, ntok, delay := b.sz.MixTurns, b.sz.MixTokens, b.sz.MixDelay
	note := fmt.Sprintf("the mix: %d turns × %d tokens at %.0f tokens/s, a WS and an SSE client each, one all-events client", n, ntok, float64(time.Second)/float64(delay))
	for _, m := range storeModes {
		ag := runs[string(m)]
		cpuTarget, cpuPass := "", func(Row) bool { return true }
		if m == store.ModeFast {
			cpuTarget, cpuPass = "≤ 1.4× bare", func(r Row) bool { return r.Ratio <= 1.4 }
		}
		b.add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: mix server CPU, %% of %d cores", m, numCPU()), Unit: "%", Bare: serverPct(bare), Agentik: serverPct(ag), Target: cpuTarget, Note: note},
			passIf(cpuTarget != "", cpuPass))
		b.add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: mix token delivery p99", m), Unit: "ms", Bare: quantileMS(bare.lat, 0.99), Agentik: quantileMS(ag.lat, 0.99), Target: "≤ 2× bare",
			Note: fmt.Sprintf("%d samples; after each turn's first %d tokens %.1f ms (bare %.1f); a turn's first %d, one watcher a turn: %.1f ms (bare %.1f)",
				len(ag.lat), steadyAfter, quantileMS(ag.steady, 0.99), quantileMS(bare.steady, 0.99), steadyAfter, ag.split.start[1], bare.split.start[1])}, func(r Row) bool { return r.Ratio <= 2 })
		p50Target, p50Pass := "", func(Row) bool { return true }
		if m == store.ModeFast {
			p50Target, p50Pass = "≤ bare + 2 ms", func(r Row) bool { return r.Agentik <= r.Bare+2 }
		}
		b.add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: mix token delivery p50", m), Unit: "ms", Bare: quantileMS(bare.lat, 0.5), Agentik: quantileMS(ag.lat, 0.5), Target: p50Target},
			passIf(p50Target != "", p50Pass))
		b.add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: mix events lost, duplicated or out of order", m), Unit: "count", Bare: float64(bare.lost), Agentik: float64(ag.lost), Target: "0"},
			func(r Row) bool { return r.Agentik == 0 })
	}
	fast, plain := runs[string(store.ModeFast)], runs[string(store.ModePlain)]
	b.add(Row{Scenario: "modes", Metric: "what the fast layer buys: mix server CPU, fast (agentik column) against plain (bare column)", Unit: "%", Bare: serverPct(plain), Agentik: serverPct(fast),
		Note: "below 1× is what the delta log, the run indexes, the own driver and the event pool save in the mix"}, nil)
	return nil
}

// passIf is pass when on, else no verdict.
func passIf(on bool, pass func(Row) bool) func(Row) bool {
	if !on {
		return nil
	}
	return pass
}

// modesReplay replays the seeded conversation from a database each mode
// wrote, on an agentik of that mode, beside the bare SELECT of the same
// file's copy of the events.
func (b *bench) modesReplay(ctx context.Context) error {
	n := b.sz.ReplayEvents
	for _, m := range storeModes {
		db := "seeded-" + string(m) + ".db"
		if m == envMode() {
			db = "seeded.db" // the replay and rest scenarios' database
		}
		sd, err := b.seedIn(ctx, db, m)
		if err != nil {
			return err
		}
		t, err := b.agentik(ctx, db, modeEnv(m))
		if err != nil {
			return err
		}
		res, err := b.replayRounds(ctx, sd, t, " ("+string(m)+" mode)")
		t.Close()
		if err != nil {
			return fmt.Errorf("%s mode: %w", m, err)
		}
		b.add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: replay, %d stored events → 1 WS client, to caught_up", m, n), Unit: "events/s", Bare: median(res.bareRate), Agentik: median(res.rate),
			Note: fmt.Sprintf("the database written in %s mode; bare: SELECT of a copy of the same events in the same file; median of %d", m, b.sz.ReplayRounds)}, nil)
		b.add(Row{Scenario: "modes", Metric: fmt.Sprintf("%s mode: replay CPU per event (bare: the SELECT)", m), Unit: "µs", Bare: median(res.bareCPU), Agentik: median(res.serverCPU), Note: res.cpuNote(b)}, nil)
	}
	return nil
}
