package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// saturationP99 is the delivery p99 above which a load counts as more
// than one instance carries (issue 54).
const saturationP99 = 250.0 // ms

// satMinTokens is the fewest tokens of a step's turn: the p99 leaves out
// each turn's first steadyAfter (its start, a burst of turns starting at
// once, not the token rate), so the rest are twice as many.
const satMinTokens = 3 * steadyAfter

// satResolution is how close the search brings the lowest pace that
// failed to the highest that held: within this fraction above it.
const satResolution = 0.2

// saturation: how far one instance goes before delivery breaks. SatTurns
// turns at once, one WebSocket watcher each, on one process per side;
// each step runs every turn at one pace (tokens/s) for about SatSeconds
// (satMinTokens at least), the paces chosen by a paceSearch from SatPace.
// A step holds when the delivery p99 of the turns' tokens after their
// first steadyAfter stays within 250 ms (the first, a hundred turns
// starting at once, are the note's second p99), no token is lost (the bare relay
// drops a frame when a subscriber's queue is full) and the model wrote
// at least 70 % of the pace asked: the fake, the clients and the server
// share the machine, so a fake that falls short means the machine, not
// the server alone, could not carry the pace (the step's note says which
// cause failed it and each process's CPU). The figure is the rate the
// model wrote at (each stream's tokens over its first byte to its last
// token, summed) in the highest step that held, for agentik and the bare
// relay; then for two agentik instances on one PostgreSQL, the turns on
// the first and watched on the second, beside one instance's.
func (b *bench) saturation(ctx context.Context) error {
	bare, err := b.saturateOne(ctx, "bare", b.search(b.sz.SatPace, b.sz.SatSteps))
	if err != nil {
		return err
	}
	one, err := b.saturateOne(ctx, "agentik", b.search(b.sz.SatPace, b.sz.SatSteps))
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%d turns × one WS watcher", b.sz.SatTurns)
	b.add(Row{Scenario: "saturation", Metric: fmt.Sprintf("model's token rate at the highest step with delivery p99 ≤ %.0f ms, nothing lost, %s", saturationP99, what), Unit: "tokens/s",
		Bare: bare.rate, Agentik: one.rate, Target: "≥ 0.7× bare",
		Note: fmt.Sprintf("%s a step; pace a turn (tokens/s): offered → written, p99 (with the turns' starts), lost, CPU in %% of a core: bare %s; agentik %s", b.sz.SatSeconds, bare.steps, one.steps)},
		func(r Row) bool { return r.Ratio >= 0.7 })

	if !b.sz.SatTwo { // -quick: its minute has no room for two more starts
		return nil
	}
	// Two instances: the search starts at the pace one instance held (or
	// the one it would have tried next), a step fewer.
	b.summarizedPhase("instances", b.instanceProfiled()+" of the two-instance search")
	from := one.pace
	if from == 0 {
		from = one.failed / 2
	}
	two, err := b.saturateTwo(ctx, b.search(from, b.sz.SatSteps-1))
	if err != nil {
		return err
	}
	b.add(Row{Scenario: "saturation", Metric: fmt.Sprintf("2 instances on one PostgreSQL, turns on the first, watched on the second: model's token rate at the highest step held, %s (bare: one instance's, SQLite)", what), Unit: "tokens/s",
		Bare: one.rate, Agentik: two.rate,
		Note: "steps: " + two.steps}, nil)
	return nil
}

// saturated is one side's search: the model's rate in the highest step
// that held (0: none held), that step's pace a turn, the lowest pace that
// failed (0: none), and every step.
type saturated struct {
	rate         float64
	pace, failed int
	steps        string
}

// saturateOne searches one process's saturation: which is "bare" (the bare
// relay) or "agentik" (on SQLite).
func (b *bench) saturateOne(ctx context.Context, which string, search paceSearch) (saturated, error) {
	var (
		t     target
		err   error
		setup = b.agentikMix
	)
	if which == "bare" {
		t, err = startBare(ctx, b.fake.URL)
		setup = b.bareMix
	} else {
		t, err = b.agentik(ctx, "saturation.db")
	}
	if err != nil {
		return saturated{}, err
	}
	defer t.Close()
	return b.saturate(ctx, which, search, []target{t}, nil, func(ctx context.Context, ntok int, delay time.Duration) (*side, error) {
		return setup(ctx, t, b.sz.SatTurns, ntok, delay, false, false, 1)
	})
}

// saturateTwo searches the saturation of two instances on a fresh
// PostgreSQL schema: turns sent through the first, watched on the second
// (instance -profile-instance runs in this process when profiling).
func (b *bench) saturateTwo(ctx context.Context, search paceSearch) (saturated, error) {
	v := instVariant{n: 2, watchers: 1}
	procs, pids, stop, err := b.startInstances(ctx, v, nil)
	if err != nil {
		return saturated{}, err
	}
	defer stop()
	return b.saturate(ctx, v.String(), search, procs, pids, func(ctx context.Context, ntok int, delay time.Duration) (*side, error) {
		sd, _, err := b.instancesSide(ctx, v, procs, b.sz.SatTurns, ntok, delay)
		return sd, err
	})
}

// search is a search of at most steps steps from pace first, no lower
// than a sixteenth of SatPace (a step lasts satMinTokens at least: 2.5 s
// at 12 tokens/s).
func (b *bench) search(first, steps int) paceSearch {
	return paceSearch{first: first, floor: max(1, b.sz.SatPace/16), limit: b.sz.SatMaxPace, steps: steps}
}

// saturate runs the steps of one search on procs (pids: theirs, when
// PostgreSQL's CPU is to be measured too), each on a fresh side from
// setup, and returns the highest that held.
func (b *bench) saturate(ctx context.Context, name string, search paceSearch, procs []target, pids []int, setup func(ctx context.Context, ntok int, delay time.Duration) (*side, error)) (saturated, error) {
	turns := b.sz.SatTurns
	written := map[int]float64{}
	var steps []string
	for pace := search.next(); pace > 0; pace = search.next() {
		delay := time.Second / time.Duration(pace)
		ntok := max(satMinTokens, int(b.sz.SatSeconds/delay))
		sd, err := setup(ctx, ntok, delay)
		if err != nil {
			return saturated{}, err
		}
		var pw *pgWatch
		if pids != nil {
			if pw, err = newPGWatch(ctx, b.postgres, pids); err == nil {
				err = pw.start(ctx)
			}
			if err != nil {
				sd.close()
				return saturated{}, err
			}
		}
		cpu0 := make([]time.Duration, len(procs))
		for i, p := range procs {
			cpu0[i] = p.CPU()
		}
		res, err := b.drive(ctx, sd, turns, ntok, delay)
		cpu := make([]time.Duration, len(procs))
		for i, p := range procs {
			cpu[i] = p.CPU() - cpu0[i]
		}
		var pg time.Duration
		if pw != nil {
			for _, d := range pw.finish().cpu {
				pg += d
			}
			pw.close()
		}
		if err != nil {
			sd.close()
			return saturated{}, err
		}
		w := b.modelRate(sd, ntok)
		sd.close()
		offered := float64(turns * pace)
		p99, p99all := quantileMS(res.steady, 0.99), quantileMS(res.lat, 0.99)
		var why []string
		if p99 > saturationP99 {
			why = append(why, "p99")
		}
		if res.lost > 0 {
			why = append(why, "lost")
		}
		if w < 0.7*offered {
			why = append(why, "the model fell short")
		}
		ok := len(why) == 0
		search.record(pace, ok)
		if ok {
			written[pace] = w
		}
		split := cpuSplit(res.wall, cpu, pg, pids != nil, res.selfCPU)
		verdict := "held"
		if !ok {
			verdict = "failed: " + strings.Join(why, ", ")
		}
		steps = append(steps, fmt.Sprintf("%d: %.0f → %.0f, %.0f ms (%.0f), %d, %s (%s)", pace, offered, w, p99, p99all, res.lost, split, verdict))
		b.progress("saturation %s: %d turns × %d tokens/s = %.0f tokens/s offered, %.0f written by the model; delivery p99 %.1f ms (with each turn's first %d tokens %.1f ms), lost %d; CPU %s; %s",
			name, turns, pace, offered, w, p99, steadyAfter, p99all, res.lost, split, verdict)
	}
	return saturated{rate: written[search.held], pace: search.held, failed: search.failed, steps: strings.Join(steps, "; ")}, nil
}

// cpuSplit says where a step's CPU went, in % of one core over wall: each
// agentik process (or the one server), PostgreSQL's backends when
// measured, and the bench (the fake model and the clients).
func cpuSplit(wall time.Duration, procs []time.Duration, pg time.Duration, withPG bool, bench time.Duration) string {
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / wall.Seconds() }
	var parts []string
	for i, d := range procs {
		name := "server"
		if len(procs) > 1 {
			name = fmt.Sprintf("i%d", i+1)
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", name, pct(d)))
	}
	if withPG {
		parts = append(parts, fmt.Sprintf("pg %.0f%%", pct(pg)))
	}
	parts = append(parts, fmt.Sprintf("bench %.0f%%", pct(bench)))
	return strings.Join(parts, ", ")
}

// paceSearch chooses the paces (tokens/s a turn) of a saturation search's
// steps: from first, each step doubles the pace until one fails (or limit
// holds); then each tries the geometric middle of the highest pace that
// held and the lowest that failed, until the failed is within
// satResolution above the held. A first pace that fails is halved until
// one holds, down to floor. At most steps are tried. Fewer, longer steps
// than a linear sweep: the default run has room for about four a side.
type paceSearch struct {
	first, floor, limit, steps int
	held, failed               int // the highest pace held, the lowest failed; 0: none yet
	tried                      int
}

// next is the pace of the next step, or 0 when the search is done.
func (s *paceSearch) next() int {
	switch {
	case s.tried >= s.steps:
		return 0
	case s.held == 0 && s.failed == 0:
		return max(1, s.floor, min(s.first, s.limit))
	case s.failed == 0: // nothing failed yet: double
		if s.held >= s.limit {
			return 0
		}
		return min(2*s.held, s.limit)
	case s.held == 0: // nothing held yet: halve
		if s.failed/2 < max(1, s.floor) {
			return 0
		}
		return s.failed / 2
	case float64(s.failed) <= float64(s.held)*(1+satResolution):
		return 0
	}
	p := int(math.Round(math.Sqrt(float64(s.held) * float64(s.failed))))
	if p <= s.held || p >= s.failed {
		return 0
	}
	return p
}

// record notes whether a step at pace held.
func (s *paceSearch) record(pace int, held bool) {
	s.tried++
	switch {
	case held && pace > s.held:
		s.held = pace
	case !held && (s.failed == 0 || pace < s.failed):
		s.failed = pace
	}
}

// modelRate is the rate at which the fake wrote the tokens of sd's runs,
// which ran at once: the sum over the runs of each one's tokens over the
// time from its first byte to its last token.
func (b *bench) modelRate(sd *side, ntok int) float64 {
	sum := 0.0
	for _, s := range sd.sinks {
		f, ok1 := b.fake.firstByte(s.key)
		l, ok2 := b.fake.stamp(s.key, ntok)
		if ok1 && ok2 && l.After(f) {
			sum += float64(ntok) / l.Sub(f).Seconds()
		}
	}
	return sum
}
