package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentik/agentik/internal/store"
)

// defaultPostgres is where the instances scenario finds PostgreSQL (the
// test database of docs/OPERATIONS.md; -postgres changes it).
const defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// instances: two and four agentik processes on one PostgreSQL. Turns run
// on the first instance; every conversation is watched by WebSocket
// clients of the other instances, so each token measured crossed the
// database (commit, NOTIFY, the other instance's catch-up read, its
// broker). Each step (a load of turns at once) runs the control, then two
// and four instances, each turn watched by instWatchers clients in all of
// them: the control's on its one instance, two instances' all on the
// second, four instances' one on each other. So each comparison delivers
// the same events to the same clients and differs only in crossing
// instances. The steps go up until two instances fall behind: the
// rate at which LISTEN/NOTIFY and the catch-up reads saturate on this
// machine. Each variant has a schema of its own for every step, the
// three migrated at once before the first: its processes start afresh at
// each step (one variant's at a time: four instances hold 68 of
// PostgreSQL's 100 connections) on its schema, which then holds the
// earlier steps' turns. A fresh schema a step, made, migrated and dropped
// nine times one after the other, was one to three seconds of
// each step's start in a busy run.
func (b *bench) instances(ctx context.Context) error {
	ntok, delay := b.sz.InstanceTokens, b.sz.FanoutDelay
	schemas := map[instVariant]*pgSchema{}
	defer func() {
		for _, sc := range schemas {
			sc.drop()
		}
	}()
	// The variants' schemas, migrated at once before the first step.
	vs := b.instVariants(1, 2, 4)
	for _, v := range vs {
		sc, err := newPGSchema(ctx, b.postgres)
		if err != nil {
			return err
		}
		schemas[v] = sc
	}
	if err := parallel(ctx, len(vs), len(vs), func(ctx context.Context, i int) error { return schemas[vs[i]].migrate(ctx) }); err != nil {
		return fmt.Errorf("instances: migrate: %w", err)
	}
	// Each step runs its variants back to back, so a busy machine weighs
	// on all of them alike: each count's control (one instance, its own
	// clients watching: the same load without crossing instances), then
	// that count of instances.
	var first float64
	for _, turns := range b.sz.InstanceSteps {
		behind := false
		controls := map[int]instResult{} // by watchers a turn
		for _, v := range vs {
			res, err := b.instancesStep(ctx, v, schemas[v], turns, ntok, delay, controls)
			if err != nil {
				return err
			}
			if v.n == 1 {
				controls[v.watchers] = res
			}
			if v.n != 2 || v.relay {
				continue
			}
			p99 := quantileMS(res.lat, 0.99)
			if first == 0 {
				first = p99
			}
			behind = p99 > 10*max(first, 5) || res.wall > time.Duration(ntok)*delay*2+time.Second
		}
		if behind { // the step's other variants ran: they compare at it
			offered := float64(turns) / delay.Seconds()
			b.progress("instances 2: delivery fell behind at %d turns (%.0f tokens/s offered); no higher step", turns, offered)
			b.add(Row{Scenario: "instances", Metric: "2 instances: saturated at", Unit: "tokens/s offered", Agentik: offered,
				Note: "p99 above 10× the first step's, or the turns took twice their length"}, nil)
			break
		}
	}
	return nil
}

// instVariant is one configuration of the instances scenario: n instances
// (1: the control, watched on the instance that runs the turns), watched
// by watchers clients a turn (on the instances but the first, in turn; the
// control's all on its one); relay: the committed events go between the
// instances through the experimental relay (internal/store/relay.go,
// served by this process), PostgreSQL only the log, instead of
// LISTEN/NOTIFY and a catch-up read.
type instVariant struct {
	n, watchers int
	relay       bool
}

// instWatchers is how many clients watch each turn of the instances
// scenario: one on each watching instance of four.
const instWatchers = 3

// instVariants are the variants of each count of instances, each turn
// watched by instWatchers clients: one instance (the control), and each
// count above one also over the relay with -relay.
func (b *bench) instVariants(counts ...int) []instVariant {
	var vs []instVariant
	for _, n := range counts {
		vs = append(vs, instVariant{n: n, watchers: instWatchers})
		if n > 1 && b.withRelay {
			vs = append(vs, instVariant{n: n, watchers: instWatchers, relay: true})
		}
	}
	return vs
}

func (v instVariant) String() string {
	switch {
	case v.n == 1:
		return "1 instance (control)"
	case v.relay:
		return fmt.Sprintf("%d instances, relay sketch", v.n)
	}
	return fmt.Sprintf("%d instances", v.n)
}

// instancesStep runs one variant at one load on schema sc and reports
// it; instances above one against their control in controls (by
// watchers a turn).
func (b *bench) instancesStep(ctx context.Context, v instVariant, sc *pgSchema, turns, ntok int, delay time.Duration, controls map[int]instResult) (instResult, error) {
	res, err := b.instancesRun(ctx, v, sc, turns, ntok, delay)
	if err != nil {
		return res, fmt.Errorf("instances (%s): %w", v, err)
	}
	offered := float64(turns) / delay.Seconds()
	rate := float64(res.received) / res.wall.Seconds()
	tokRate := float64(res.received) / res.tokenWall.Seconds()
	p50, p99 := quantileMS(res.lat, 0.5), quantileMS(res.lat, 0.99)
	where := "across instances"
	if v.n == 1 {
		where = "on the same instance"
	}
	b.progress("%s: %d turns at %.0f tokens/s offered: %.0f events/s delivered %s (%.0f until the last token, %.1f s; every end after %.1f s), p50 %.1f ms, p99 %.1f ms, lost %d",
		v, turns, offered, rate, where, tokRate, res.tokenWall.Seconds(), res.wall.Seconds(), p50, p99, res.lost)
	b.instancesSplit(v, turns, res)
	if v.n > 1 && res.received > 0 && !b.inproc {
		// CPU per unit of work: steadier than rates on a busy machine.
		var watchers time.Duration
		for _, d := range res.instCPU[1:] {
			watchers += d
		}
		perEvent := float64(watchers.Microseconds()) / float64(res.received)
		perToken := float64(res.instCPU[0].Microseconds()) / float64(turns*ntok)
		b.progress("%s, %d turns: %.1f µs of the watching instances' CPU per delivered event; %.1f µs of instance 1's per token", v, turns, perEvent, perToken)
		b.add(Row{Scenario: "instances", Metric: fmt.Sprintf("%s, %d turns: watching instances' CPU per delivered event", v, turns), Unit: "µs", Agentik: perEvent,
			Note: fmt.Sprintf("instance 1 (the turns): %.1f µs per token", perToken)}, nil)
	}
	if res.lost > 0 {
		return res, fmt.Errorf("instances (%s): %d events lost, duplicated or out of order", v, res.lost)
	}
	kind := "cross-instance"
	if v.n == 1 {
		kind = "same-instance"
	}
	load := fmt.Sprintf("%d turns × %d tokens at %.0f tokens/s on instance 1, %d watchers a turn", turns, ntok, float64(time.Second)/float64(delay), v.watchers)
	p99Row := Row{Scenario: "instances", Metric: fmt.Sprintf("%s, %d turns: %s token delivery p99", v, turns, kind), Unit: "ms", Agentik: p99,
		Note: fmt.Sprintf("%.0f events/s delivered (%.0f until the last token; %.0f tokens/s offered); machine %.0f%% busy", rate, tokRate, offered, res.machine)}
	// Judged in tokens: under load the turns' instance merges a turn's
	// deltas into fewer append_text events, so events/s is not the
	// same work from one variant to the next.
	tokens := func(r instResult) float64 { return float64(r.tokens) / r.wall.Seconds() }
	rateRow := Row{Scenario: "instances", Metric: fmt.Sprintf("%s, %d turns: %s tokens delivered", v, turns, kind), Unit: "tokens/s", Agentik: tokens(res),
		Note: fmt.Sprintf("%s; %.0f events/s (%d tokens in %d events)", load, rate, res.tokens, res.received)}
	var p99Pass, ratePass func(Row) bool
	if c, ok := controls[v.watchers]; ok && v.n > 1 {
		// Against the control of the same clients: bare is its figure.
		p99Row.Bare, p99Row.Target, p99Pass = quantileMS(c.lat, 0.99), "≤ 2× control", func(r Row) bool { return r.Ratio <= 2 }
		rateRow.Bare, rateRow.Target, ratePass = tokens(c), "≥ 0.8× control", func(r Row) bool { return r.Ratio >= 0.8 }
	}
	b.add(Row{Scenario: "instances", Metric: fmt.Sprintf("%s, %d turns: %s token delivery p50", v, turns, kind), Unit: "ms", Agentik: p50, Note: load}, nil)
	b.add(p99Row, p99Pass)
	b.add(rateRow, ratePass)
	return res, nil
}

// instancesSplit reports where one step's time went: each process's CPU
// (in % of one core over the step), PostgreSQL's backends by instance and
// connection, and the statements and waits of the sampled sessions.
func (b *bench) instancesSplit(v instVariant, turns int, res instResult) {
	wall := res.wall.Seconds()
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / wall }
	var parts []string
	for i, d := range res.instCPU {
		parts = append(parts, fmt.Sprintf("i%d %.0f%%", i+1, pct(d)))
	}
	roles := make([]string, 0, len(res.pg.cpu))
	var pgSum time.Duration
	for r, d := range res.pg.cpu {
		roles = append(roles, r)
		pgSum += d
	}
	slices.Sort(roles)
	for _, r := range roles {
		parts = append(parts, fmt.Sprintf("pg %s %.0f%%", r, pct(res.pg.cpu[r])))
	}
	parts = append(parts, fmt.Sprintf("bench %.0f%%", pct(res.selfCPU)))
	split := strings.Join(parts, ", ")
	b.progress("%s, %d turns: CPU in %% of one core: %s", v, turns, split)
	for i, sh := range res.pg.aas {
		if i == 10 {
			break
		}
		b.progress("%s, %d turns: PostgreSQL active sessions %.2f: %s", v, turns, sh.aas, sh.key)
	}
	var agentik time.Duration
	for _, d := range res.instCPU {
		agentik += d
	}
	b.add(Row{Scenario: "instances", Metric: fmt.Sprintf("%s, %d turns: CPU of agentik", v, turns), Unit: "% of one core",
		Agentik: pct(agentik), Bare: 0, Note: fmt.Sprintf("PostgreSQL %.0f%%; %s; %d samples of pg_stat_activity", pct(pgSum), split, res.pg.samples)}, nil)
}

// instResult is what one step measured: the load's figures, PostgreSQL's
// side and each instance's CPU.
type instResult struct {
	loadResult
	tokenWall time.Duration // from the first send to the last token read
	pg        pgFigures
	instCPU   []time.Duration
}

// instancesRun starts n instances on schema sc and drives turns
// conversations, each sent through the first instance and watched by one
// client on each other instance.
func (b *bench) instancesRun(ctx context.Context, v instVariant, sc *pgSchema, turns, ntok int, delay time.Duration) (instResult, error) {
	procs, pids, stop, err := b.startInstances(ctx, v, sc)
	if err != nil {
		return instResult{}, err
	}
	defer stop()
	sd, lastTok, err := b.instancesSide(ctx, v, procs, turns, ntok, delay)
	if err != nil {
		return instResult{}, err
	}
	defer sd.close()
	pw, err := newPGWatch(ctx, b.postgres, pids)
	if err != nil {
		return instResult{}, err
	}
	defer pw.close()
	if err := pw.start(ctx); err != nil {
		return instResult{}, err
	}
	cpu0 := make([]time.Duration, len(procs))
	for i, p := range procs {
		cpu0[i] = p.CPU()
	}
	t0 := time.Now()
	lr, err := b.drive(ctx, sd, turns, ntok, delay)
	res := instResult{loadResult: lr, pg: pw.finish()}
	for i := range lastTok {
		res.tokenWall = max(res.tokenWall, time.Duration(lastTok[i].Load()-t0.UnixNano()))
	}
	for i, p := range procs {
		res.instCPU = append(res.instCPU, p.CPU()-cpu0[i])
	}
	return res, err
}

// pgSchema is a schema of the bench's PostgreSQL that instances start on:
// its DSN, whether an instance has started on it yet, and how to drop it.
type pgSchema struct {
	dsn     string
	started bool
	drop    func()
}

// newPGSchema makes an empty schema (freshSchema), dropped once by drop.
func newPGSchema(ctx context.Context, postgres string) (*pgSchema, error) {
	dsn, drop, err := freshSchema(ctx, postgres)
	if err != nil {
		return nil, err
	}
	return &pgSchema{dsn: dsn, drop: sync.OnceFunc(drop)}, nil
}

// migrate migrates sc through the store, as an instance's start would
// (the first instance still starts alone: it defines the default agent).
func (sc *pgSchema) migrate(ctx context.Context) error {
	st, err := store.Open(ctx, sc.dsn, store.Options{})
	if err != nil {
		return err
	}
	return st.Close()
}

// startInstances starts v's instances on schema sc, or on a fresh one
// when sc is nil (instance -profile-instance in this process when
// profiling), and returns them, their process ids and how to stop them
// (and drop the fresh schema).
func (b *bench) startInstances(ctx context.Context, v instVariant, sc *pgSchema) (procs []target, pids []int, stop func(), err error) {
	n := v.n
	drop := func() {}
	if sc == nil {
		if sc, err = newPGSchema(ctx, b.postgres); err != nil {
			return nil, nil, nil, err
		}
		drop = sc.drop
	}
	dsn := sc.dsn
	var env []string
	closeRelay := func() {}
	if v.relay {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			drop()
			return nil, nil, nil, err
		}
		served := make(chan struct{})
		go func() { defer close(served); _ = store.ServeRelay(ln) }()
		closeRelay = func() { ln.Close(); <-served } // after the instances close
		env = append(env, "AGENTIK_EXPERIMENTAL_RELAY="+ln.Addr().String())
	}
	procs, pids = make([]target, n), make([]int, n)
	stop = func() { // at once: each drains for a moment
		var wg sync.WaitGroup
		for _, p := range procs {
			if p != nil {
				wg.Go(func() { p.Close() })
			}
		}
		wg.Wait()
		closeRelay()
		drop()
	}
	start := func(i int) (err error) {
		if b.inproc && i+1 == b.profInstance {
			// Profiled: this instance's goroutines carry side=server.
			procs[i], err = startInProc(ctx, dsn, b.fake.URL, env...)
			pids[i] = os.Getpid()
			return err
		}
		p, err := startAgentikDSN(ctx, b.bin, dsn, b.fake.URL, env...)
		if p != nil {
			procs[i], pids[i] = p, p.cmd.Process.Pid
		}
		return err
	}
	// The first instance on a schema migrates it (unless migrate did) and
	// defines the default agent, which two instances starting at once
	// would both define ("slug taken"); the others then start at once (all
	// at once on a schema an instance started on before).
	first := 0
	if !sc.started {
		if err := start(0); err != nil {
			stop()
			return nil, nil, nil, err
		}
		sc.started, first = true, 1
	}
	if err := parallel(ctx, n-first, n, func(_ context.Context, i int) error { return start(i + first) }); err != nil {
		stop()
		return nil, nil, nil, err
	}
	b.progress("%s: started on one PostgreSQL", v)
	return procs, pids, stop, nil
}

// instancesSide makes turns conversations on procs, each sent through the
// first instance and watched by one WebSocket client on each other
// instance (the control, one instance, by one of its own), and returns
// the load's side and each client's time of its last token (unix ns).
func (b *bench) instancesSide(ctx context.Context, v instVariant, procs []target, turns, ntok int, delay time.Duration) (*side, []atomic.Int64, error) {
	n := len(procs)
	sd := &side{name: v.String(), t: multiTarget(procs)}
	ids, err := b.createConversations(ctx, procs[0].URL(), turns, func(i int) string { return fmt.Sprintf("instances %d", i) }, nil)
	if err != nil {
		return nil, nil, err
	}
	// Senders on the first instance, 16 turns each: a connection runs at
	// most 32 commands at once.
	senders := make([]*wsClient, (turns+15)/16)
	for i := range senders {
		if senders[i], err = dialWS(ctx, wsURL(procs[0].URL(), "/agentik/ws"), nil); err != nil {
			sd.close()
			return nil, nil, err
		}
		sd.closers = append(sd.closers, senders[i].Close)
	}
	var mu sync.Mutex
	watchers := max(v.watchers, 1)
	lastTok := make([]atomic.Int64, turns*watchers)
	err = parallel(ctx, turns*watchers, 32, func(ctx context.Context, j int) error {
		i := j % turns
		s := newSink(ids[i], b.fake)
		s.onTokens = func(int) { lastTok[j].Store(time.Now().UnixNano()) }
		on := procs[min(1+(j/turns)%max(n-1, 1), n-1)] // the control watches its own instance
		ws, err := watchWS(ctx, wsURL(on.URL(), "/agentik/ws"), s)
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
		sd.close()
		return nil, nil, err
	}
	sd.send = func(ctx context.Context, i int) error {
		_, err := sendTurn(ctx, senders[i/16], ids[i], prompt(ntok, delay, ids[i]))
		return err
	}
	return sd, lastTok, nil
}

// multiTarget is several processes measured as one: their CPU summed.
type multiTarget []target

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
