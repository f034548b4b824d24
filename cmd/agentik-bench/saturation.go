package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// saturationP99 is the delivery p99 above which a load counts as more
// than one instance carries (issue 54).
const saturationP99 = 250.0 // ms

// saturation: how far one instance goes before delivery breaks. SatTurns
// turns at once, one WebSocket watcher each, on one process per side;
// each step raises every turn's pace (SatRates, tokens/s) for about
// SatSeconds, until token delivery p99 crosses 250 ms or a token is lost
// (the bare relay drops a frame when a subscriber's queue is full). The
// figure is the rate the model wrote at (each stream's tokens over its
// first byte to its last token, summed: the fake shares the machine and
// falls short of a fast pace) in the last
// step that stayed under it, for agentik and the bare relay. The steps
// also stop when the model wrote under 70 % of the pace asked: the load
// generator, not the server, is then the limit, and the row says so.
func (b *bench) saturation(ctx context.Context) error {
	bare, bareSteps, err := b.saturate(ctx, "bare")
	if err != nil {
		return err
	}
	ag, agSteps, err := b.saturate(ctx, "agentik")
	if err != nil {
		return err
	}
	b.add(Row{Scenario: "saturation", Metric: fmt.Sprintf("model's token rate at the last step with delivery p99 ≤ %.0f ms and nothing lost, %d turns × one WS watcher", saturationP99, b.sz.SatTurns), Unit: "tokens/s",
		Bare: bare, Agentik: ag, Target: "≥ 0.7× bare",
		Note: fmt.Sprintf("steps of %s tokens/s a turn, about %s each; offered → written, p99, lost: bare %s; agentik %s", joinInts(b.sz.SatRates), b.sz.SatSeconds, bareSteps, agSteps)},
		func(r Row) bool { return r.Ratio >= 0.7 })
	return nil
}

// saturate steps one side's load up and returns the model's rate in the
// last step that held (0: not even the first) and what each step
// measured.
func (b *bench) saturate(ctx context.Context, side string) (float64, string, error) {
	var (
		t     target
		err   error
		setup = b.agentikMix
	)
	if side == "bare" {
		t, err = startBare(ctx, b.fake.URL)
		setup = b.bareMix
	} else {
		t, err = b.agentik(ctx, "saturation.db")
	}
	if err != nil {
		return 0, "", err
	}
	defer t.Close()
	turns := b.sz.SatTurns
	held := 0.0
	var steps []string
	for _, rate := range b.sz.SatRates {
		delay := time.Second / time.Duration(rate)
		ntok := max(1, int(b.sz.SatSeconds/delay))
		sd, err := setup(ctx, t, turns, ntok, delay, false, false, 1)
		if err != nil {
			return 0, "", err
		}
		res, err := b.drive(ctx, sd, turns, ntok, delay)
		if err != nil {
			sd.close()
			return 0, "", err
		}
		written := b.modelRate(sd, ntok)
		sd.close()
		offered := float64(turns * rate)
		p99 := quantileMS(res.lat, 0.99)
		steps = append(steps, fmt.Sprintf("%.0f → %.0f, %.0f ms, %d", offered, written, p99, res.lost))
		b.progress("saturation %s: %d turns × %d tokens/s = %.0f tokens/s offered, %.0f written by the model; delivery p99 %.1f ms, lost %d", sd.name, turns, rate, offered, written, p99, res.lost)
		if p99 > saturationP99 || res.lost > 0 {
			break
		}
		held = written
		if written < 0.7*offered {
			steps = append(steps, "the model fell short of the pace: the load generator's limit")
			break
		}
	}
	return held, strings.Join(steps, "; "), nil
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

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
