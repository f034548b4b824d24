package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// defaultPostgres is where the instances scenario finds PostgreSQL (the
// test database of docs/OPERATIONS.md; -postgres changes it).
const defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// instances: two and four agentik processes on one PostgreSQL. Turns run
// on the first instance; every conversation is watched by WebSocket
// clients of the other instances, so each token measured crossed the
// database (commit, NOTIFY, the other instance's catch-up read, its
// broker). With two instances the load steps up until delivery falls
// behind: the rate at which LISTEN/NOTIFY and the catch-up reads saturate
// on this machine.
func (b *bench) instances(ctx context.Context) error {
	if b.inproc {
		return fmt.Errorf("instances runs several agentik processes: run it without -cpuprofile/-trace")
	}
	ntok, delay := b.sz.FanoutTokens, b.sz.FanoutDelay
	for _, n := range []int{2, 4} {
		steps := b.sz.InstanceSteps
		if n != 2 {
			steps = steps[:1]
		}
		var first float64
		for _, turns := range steps {
			res, err := b.instancesRun(ctx, n, turns, ntok, delay)
			if err != nil {
				return fmt.Errorf("instances (%d): %w", n, err)
			}
			offered := float64(turns) / delay.Seconds()
			rate := float64(res.received) / res.wall.Seconds()
			p50, p99 := quantileMS(res.lat, 0.5), quantileMS(res.lat, 0.99)
			if first == 0 {
				first = p99
			}
			b.progress("instances %d: %d turns at %.0f tokens/s offered: %.0f events/s delivered across instances, p50 %.1f ms, p99 %.1f ms, lost %d",
				n, turns, offered, rate, p50, p99, res.lost)
			if res.lost > 0 {
				return fmt.Errorf("instances (%d): %d events lost, duplicated or out of order", n, res.lost)
			}
			b.add(Row{Scenario: "instances", Metric: fmt.Sprintf("%d instances, %d turns: cross-instance token delivery p50", n, turns), Unit: "ms", Agentik: p50,
				Note: fmt.Sprintf("%d turns × %d tokens at %.0f tokens/s on instance 1, watched on the others", turns, ntok, float64(time.Second)/float64(delay))}, nil)
			b.add(Row{Scenario: "instances", Metric: fmt.Sprintf("%d instances, %d turns: cross-instance token delivery p99", n, turns), Unit: "ms", Agentik: p99,
				Note: fmt.Sprintf("%.0f events/s delivered (%.0f tokens/s offered); machine %.0f%% busy", rate, offered, res.machine)}, nil)
			if behind := p99 > 10*max(first, 5) || res.wall > time.Duration(ntok)*delay*2+time.Second; behind {
				b.progress("instances %d: delivery fell behind at %d turns (%.0f tokens/s offered); no higher step", n, turns, offered)
				b.add(Row{Scenario: "instances", Metric: fmt.Sprintf("%d instances: saturated at", n), Unit: "tokens/s offered", Agentik: offered,
					Note: "p99 above 10× the first step's, or the turns took twice their length"}, nil)
				break
			}
		}
	}
	return nil
}

// instancesRun starts n instances on a fresh schema and drives turns
// conversations, each sent through the first instance and watched by one
// client on each other instance.
func (b *bench) instancesRun(ctx context.Context, n, turns, ntok int, delay time.Duration) (loadResult, error) {
	dsn, drop, err := freshSchema(ctx, b.postgres)
	if err != nil {
		return loadResult{}, err
	}
	defer drop()
	procs := make([]*proc, n)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.Close()
			}
		}
	}()
	for i := range procs {
		if procs[i], err = startAgentikDSN(ctx, b.bin, dsn, b.fake.URL); err != nil {
			return loadResult{}, err
		}
	}
	b.progress("instances %d: started on one PostgreSQL", n)
	sd := &side{name: fmt.Sprintf("%d instances", n), t: multiTarget(procs)}
	defer sd.close()
	ids := make([]string, turns)
	for i := range ids {
		if ids[i], err = b.createConversation(ctx, procs[0].URL(), fmt.Sprintf("instances %d", i)); err != nil {
			return loadResult{}, err
		}
	}
	// Senders on the first instance, 16 turns each: a connection runs at
	// most 32 commands at once.
	senders := make([]*wsClient, (turns+15)/16)
	for i := range senders {
		if senders[i], err = dialWS(ctx, wsURL(procs[0].URL(), "/agentik/ws"), nil); err != nil {
			return loadResult{}, err
		}
		sd.closers = append(sd.closers, senders[i].Close)
	}
	var mu sync.Mutex
	err = parallel(ctx, turns*(n-1), 32, func(ctx context.Context, j int) error {
		i := j % turns
		s := newSink(ids[i], b.fake)
		ws, err := watchWS(ctx, wsURL(procs[1+j/turns].URL(), "/agentik/ws"), s)
		if err != nil {
			return err
		}
		mu.Lock()
		sd.closers = append(sd.closers, ws.Close)
		sd.sinks = append(sd.sinks, s)
		mu.Unlock()
		_, err = ws.subscribe(ctx, "conversation", ids[i], -1)
		return err
	})
	if err != nil {
		return loadResult{}, err
	}
	sd.send = func(ctx context.Context, i int) error {
		_, err := sendTurn(ctx, senders[i/16], ids[i], prompt(ntok, delay, ids[i]))
		return err
	}
	return b.drive(ctx, sd, turns, ntok, delay)
}

// multiTarget is several processes measured as one: their CPU summed.
type multiTarget []*proc

func (m multiTarget) URL() string { return m[0].URL() }
func (m multiTarget) CPU() time.Duration {
	var d time.Duration
	for _, p := range m {
		d += p.CPU()
	}
	return d
}
func (m multiTarget) RSS() int64 {
	var n int64
	for _, p := range m {
		n += p.RSS()
	}
	return n
}
func (m multiTarget) Close() error { return nil } // the scenario closes each

// freshSchema makes an empty schema on the PostgreSQL at dsn and returns a
// DSN that uses it, and how to drop it.
func freshSchema(ctx context.Context, dsn string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL at %s (-postgres): %w", dsn, err)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	schema := "bench_" + hex.EncodeToString(r[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u, err := url.Parse(dsn)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	}, nil
}
