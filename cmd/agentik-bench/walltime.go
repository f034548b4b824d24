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
// each count of answers at once of WallAnswers. The two sides run at the
// same time, each in a process of its own kept for every count: answers
// at a human pace leave most of the machine idle (the mix, 100 turns at
// this pace with three clients a token, keeps agentik near a fifth of two
// cores), the figure is the model's pace plus milliseconds, and a drift
// in the machine's load falls on both sides alike. One side after the
// other, the 100 answers took their pace (10 s at full size) once more in
// every default run.
func (b *bench) walltime(ctx context.Context) error {
	ntok, delay := b.sz.WallTokens, b.sz.WallDelay
	pace := time.Duration(ntok) * delay
	bt, err := startBare(ctx, b.fake.URL)
	if err != nil {
		return err
	}
	defer bt.Close()
	at, err := b.agentik(ctx, "walltime.db")
	if err != nil {
		return err
	}
	defer at.Close()
	for _, n := range b.sz.WallAnswers {
		bare, ag, err := b.wallBoth(ctx, bt, at, n)
		if err != nil {
			return err
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
				Note: fmt.Sprintf("durability's cost: %+.1f ms (%+.2f %%) of an answer the model paces at %s; agentik: the runner, the log and a WebSocket client; bare: the relay and a WebSocket client; the two sides at once",
					aq-bq, 100*(aq-bq)/bq, pace)}, nil)
		}
	}
	return nil
}

// wallBoth sets up n answers on the bare relay bt and on agentik at, a
// WebSocket client each, then runs both sides' answers at once and
// returns each answer's time from the model's first byte to its client's
// last token, per side.
func (b *bench) wallBoth(ctx context.Context, bt, at target, n int) (bare, ag []time.Duration, err error) {
	ntok, delay := b.sz.WallTokens, b.sz.WallDelay
	bs, err := b.bareMix(ctx, bt, n, ntok, delay, false, false, 1)
	if err != nil {
		return nil, nil, err
	}
	defer bs.close()
	as, err := b.agentikMix(ctx, at, n, ntok, delay, false, false, 1)
	if err != nil {
		return nil, nil, err
	}
	defer as.close()
	b.progress("walltime: %d answer(s) at once of %d tokens at %.0f tokens/s on each side, both sides at once", n, ntok, float64(time.Second)/float64(delay))
	var errs [2]error
	var wg sync.WaitGroup
	wg.Go(func() { bare, errs[0] = b.wallOn(ctx, bs, n) })
	wg.Go(func() { ag, errs[1] = b.wallOn(ctx, as, n) })
	wg.Wait()
	return bare, ag, errors.Join(errs[:]...)
}

// wallOn runs the n answers of sd and returns each answer's time from
// the model's first byte to its client's last token.
func (b *bench) wallOn(ctx context.Context, sd *side, n int) ([]time.Duration, error) {
	res, err := b.drive(ctx, sd, n, b.sz.WallTokens, b.sz.WallDelay)
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
