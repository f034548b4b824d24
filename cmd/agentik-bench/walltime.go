package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// walltime: what durability costs an answer in wall time, the figure
// LibreChat publishes for its resumable streams (+16–18 %, their PR
// #14614): an answer of WallTokens at the model's pace, from the model's
// first byte to the client's last token, on agentik (the runner, the log,
// a WebSocket client) against the bare relay (one WebSocket client), at
// each count of answers at once of WallAnswers. With one answer the two
// sides run at the same time (two streams at a human pace: the machine
// is all but idle either way); with more, one after the other.
func (b *bench) walltime(ctx context.Context) error {
	ntok, delay := b.sz.WallTokens, b.sz.WallDelay
	pace := time.Duration(ntok) * delay
	for _, n := range b.sz.WallAnswers {
		var bare, ag []time.Duration
		if n == 1 {
			var errs [2]error
			var wg sync.WaitGroup
			wg.Go(func() { bare, errs[0] = b.wallOn(ctx, "bare", n) })
			wg.Go(func() { ag, errs[1] = b.wallOn(ctx, "agentik", n) })
			wg.Wait()
			if err := errors.Join(errs[:]...); err != nil {
				return err
			}
		} else {
			var err error
			if bare, err = b.wallOn(ctx, "bare", n); err != nil {
				return err
			}
			if ag, err = b.wallOn(ctx, "agentik", n); err != nil {
				return err
			}
		}
		what := fmt.Sprintf("%d answers at once", n)
		if n == 1 {
			what = "1 answer"
		}
		metric := fmt.Sprintf("%s of %d tokens at %.0f tokens/s: model's first byte → client's last token", what, ntok, float64(time.Second)/float64(delay))
		qs := []float64{0.5, 0.99}
		if n == 1 {
			qs = qs[:1]
		}
		for _, q := range qs {
			bq, aq := quantileMS(bare, q), quantileMS(ag, q)
			name := metric
			if n > 1 {
				name += fmt.Sprintf(", p%.0f", 100*q)
			}
			b.add(Row{Scenario: "walltime", Metric: name, Unit: "ms", Bare: bq, Agentik: aq,
				Note: fmt.Sprintf("durability's cost: %+.1f ms (%+.2f %%) of an answer the model paces at %s; agentik: the runner, the log and a WebSocket client; bare: the relay and a WebSocket client",
					aq-bq, 100*(aq-bq)/bq, pace)}, nil)
		}
	}
	return nil
}

// wallOn runs n answers at once on one side ("bare" or "agentik", in a
// process of its own) with a WebSocket client each, and returns each
// answer's time from the model's first byte to its client's last token.
func (b *bench) wallOn(ctx context.Context, side string, n int) ([]time.Duration, error) {
	ntok, delay := b.sz.WallTokens, b.sz.WallDelay
	var (
		t     target
		err   error
		setup = b.agentikMix
	)
	if side == "bare" {
		t, err = startBare(ctx, b.fake.URL)
		setup = b.bareMix
	} else {
		t, err = b.agentik(ctx, fmt.Sprintf("walltime-%d.db", n))
	}
	if err != nil {
		return nil, err
	}
	defer t.Close()
	sd, err := setup(ctx, t, n, ntok, delay, false, false, 1)
	if err != nil {
		return nil, err
	}
	defer sd.close()
	b.progress("walltime %s: %d answer(s) at once of %d tokens at %.0f tokens/s", sd.name, n, ntok, float64(time.Second)/float64(delay))
	res, err := b.drive(ctx, sd, n, ntok, delay)
	if err != nil {
		return nil, err
	}
	if res.lost > 0 {
		return nil, fmt.Errorf("walltime %s: %d tokens lost, duplicated or out of order", sd.name, res.lost)
	}
	walls := make([]time.Duration, 0, len(sd.sinks))
	for _, s := range sd.sinks {
		first, ok := b.fake.firstByte(s.key)
		if !ok || s.lastAt.IsZero() {
			return nil, fmt.Errorf("walltime %s: run %s: no first byte or no last token", sd.name, s.key)
		}
		walls = append(walls, s.lastAt.Sub(first))
	}
	return walls, nil
}
