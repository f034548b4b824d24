package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/store"
)

// side is one target of the mix (or fan-out) load with its clients: a
// sink per watching client, and how to start run i.
type side struct {
	name    string
	t       target
	sinks   []*sink     // every client's sink of every run
	ws      []*wsClient // every WebSocket subscriber of a run (agentikMix)
	closers []func()
	send    func(ctx context.Context, i int) error
	lost    func() int // events the server dropped, when it counts them
	starts  *turnStarts
	check   func() error
}

func (s *side) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// loadResult is what one side measured.
type loadResult struct {
	wall     time.Duration
	cpu      time.Duration // the server's
	lat      []time.Duration
	steady   []time.Duration
	selfCPU  time.Duration // the load generator's (this process: clients and the fake)
	machine  float64       // how busy all cores were, % (others' processes too)
	lost     int           // tokens or events missing, duplicated or out of order
	unstamp  int
	received int // append_text events read by all clients
	tokens   int // the model's tokens they carried
	split    turnSplit
}

// drive starts runs staggered evenly over one token interval (users are
// not synchronized), waits until every sink saw its end, and measures.
func (b *bench) drive(ctx context.Context, sd *side, runs, ntok int, delay time.Duration) (loadResult, error) {
	var res loadResult
	c0, self0, t0, load := sd.t.CPU(), selfCPU(), time.Now(), machineLoad()
	var wg sync.WaitGroup
	errc := make(chan error, runs)
	for i := range runs {
		if d := time.Until(t0.Add(delay * time.Duration(i) / time.Duration(runs))); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sd.send(ctx, i); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return res, err
	}
	deadline := time.Now().Add(time.Duration(ntok)*delay + 2*time.Minute)
	next := time.Now().Add(2 * time.Second)
	for _, s := range sd.sinks {
		for {
			select {
			case <-s.done:
			case <-time.After(100 * time.Millisecond):
				if time.Now().After(deadline) {
					return res, fmt.Errorf("%s: a client saw no end after %s", sd.name, time.Since(t0).Round(time.Second))
				}
				if time.Now().After(next) {
					done := 0
					for _, s := range sd.sinks {
						select {
						case <-s.done:
							done++
						default:
						}
					}
					b.progress("%s: %d of %d client streams ended", sd.name, done, len(sd.sinks))
					next = time.Now().Add(2 * time.Second)
				}
				continue
			case <-ctx.Done():
				return res, ctx.Err()
			}
			break
		}
	}
	res.wall, res.cpu, res.selfCPU, res.machine = time.Since(t0), sd.t.CPU()-c0, selfCPU()-self0, load()
	want := llmtest.Tokens(ntok)
	for _, s := range sd.sinks {
		res.lat = append(res.lat, s.lat...)
		res.steady = append(res.steady, s.steady...)
		res.unstamp += s.unstamp
		res.received += s.events
		res.tokens += s.tokens
		if got := s.text.String(); got != want {
			res.lost += max(1, abs(len(strings.Fields(want))-len(strings.Fields(got))))
		}
		res.lost += s.disorder
	}
	if sd.lost != nil {
		res.lost += sd.lost()
	}
	if sd.starts != nil {
		res.split = sd.starts.split(b.fake)
	}
	if sd.check != nil {
		if err := sd.check(); err != nil {
			return res, err
		}
	}
	return res, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// watchWS connects a WebSocket client whose conversation events feed s.
func watchWS(ctx context.Context, url string, s *sink) (*wsClient, error) {
	return watchWSAs(ctx, url, "", s)
}

// watchWSAs is watchWS as the user of bearer key (none when "").
func watchWSAs(ctx context.Context, url, key string, s *sink) (*wsClient, error) {
	return dialWSWith(ctx, url, func(f *frame, at time.Time) {
		switch {
		case f.Type == protocol.FrameEvent && f.Event != nil:
			s.add(&f.Event.Event, f.Event.Seq, at)
		case f.Type == protocol.FrameCaughtUp:
			s.caughtUp(f.Seq)
		}
	}, skimNone, key)
}

// keyed is a target whose conversations belong to users: keyFor(i) is the
// bearer key of the owner of the mix's conversation i, with which it is
// created, watched and sent to.
type keyed interface{ keyFor(i int) string }

// peopleTarget is agentik with accounts: conversation i belongs to the
// user of keys[i % len(keys)].
type peopleTarget struct {
	target
	keys  []string
	phase *phaseCPU // nil: not measured
}

func (p peopleTarget) keyFor(i int) string { return p.keys[i%len(p.keys)] }

// watched, when a target has it, sees every client's sink before the
// client connects.
type watched interface{ watch(s *sink) }

func (p peopleTarget) watch(s *sink) {
	if p.phase != nil {
		p.phase.watch(s)
	}
}

func keyOf(t target, i int) string {
	if k, ok := t.(keyed); ok {
		return k.keyFor(i)
	}
	return ""
}

// watchSSE connects an SSE client whose frames (inner events) feed s.
func (b *bench) watchSSE(ctx context.Context, url string, s *sink) (*sseClient, error) {
	return dialSSE(ctx, b.hc, url, func(event string, data []byte, at time.Time) {
		var ev wireInner
		if err := jsonUnmarshal(data, &ev); err == nil {
			s.add(&ev, 0, at)
		}
	})
}

// allWatcher feeds an all-events client's frames to the sink of their
// run and counts gaps in the seqs (every event of the run is persisted, so
// the all stream must be gapless).
type allWatcher struct {
	mu    sync.Mutex
	sinks map[string]*sink
	last  int64
	gaps  int
}

func (a *allWatcher) on(f *frame, at time.Time) {
	if f.Type == protocol.FrameCaughtUp {
		a.mu.Lock()
		for _, s := range a.sinks {
			s.caughtUp(f.Seq)
		}
		a.mu.Unlock()
		return
	}
	if f.Type != protocol.FrameEvent || f.Event == nil {
		return
	}
	if f.Event.Seq != 0 {
		if a.last != 0 && f.Event.Seq != a.last+1 {
			a.gaps++
		}
		a.last = f.Event.Seq
	}
	a.mu.Lock()
	s := a.sinks[f.Event.ConversationID]
	a.mu.Unlock()
	if s != nil && f.Event.Kind == agent.KindConversation {
		s.add(&f.Event.Event, 0, at)
	}
}

// agentikMix sets up n conversations on agentik, each watched by one
// WebSocket and one SSE client, plus one client of all events.
func (b *bench) agentikMix(ctx context.Context, t target, n, ntok int, delay time.Duration, withSSE, withAll bool, subsPerRun int) (*side, error) {
	sd := &side{name: "agentik", t: t, starts: newTurnStarts()}
	senders := make([]*wsClient, n)
	aw := &allWatcher{sinks: map[string]*sink{}}
	ids, err := b.createConversations(ctx, t.URL(), n, func(i int) string { return fmt.Sprintf("load %d", i) }, func(i int) string { return keyOf(t, i) })
	if err != nil {
		return nil, err
	}
	if withAll {
		for _, id := range ids {
			s := newSink(id, b.fake)
			aw.sinks[id] = s
			sd.sinks = append(sd.sinks, s)
		}
	}
	if withAll {
		ws, err := dialWS(ctx, wsURL(t.URL(), "/agentik/ws"), aw.on)
		if err != nil {
			sd.close()
			return nil, err
		}
		sd.closers = append(sd.closers, ws.Close)
		if _, err := ws.subscribe(ctx, "all", "", -1); err != nil {
			sd.close()
			return nil, err
		}
	}
	var mu sync.Mutex
	err = parallel(ctx, n*subsPerRun, 32, func(ctx context.Context, j int) error {
		i := j % n
		s := newSink(ids[i], b.fake)
		if w, ok := t.(watched); ok {
			w.watch(s)
		}
		ws, err := watchWSAs(ctx, wsURL(t.URL(), "/agentik/ws"), keyOf(t, i), s)
		if err != nil {
			return err
		}
		mu.Lock()
		sd.closers = append(sd.closers, ws.Close)
		sd.sinks = append(sd.sinks, s)
		sd.ws = append(sd.ws, ws)
		if j < n {
			senders[i] = ws
			sd.starts.watch(ids[i], s)
		}
		mu.Unlock()
		if _, err := ws.subscribe(ctx, "conversation", ids[i], -1); err != nil {
			return err
		}
		if !withSSE || j >= n {
			return nil
		}
		s2 := newSink(ids[i], b.fake)
		sse, err := b.watchSSE(ctx, t.URL()+"/agentik/conversations/"+ids[i]+"/events", s2)
		if err != nil {
			return err
		}
		mu.Lock()
		sd.closers = append(sd.closers, sse.Close)
		sd.sinks = append(sd.sinks, s2)
		mu.Unlock()
		return nil
	})
	if err != nil {
		sd.close()
		return nil, err
	}
	sd.send = func(ctx context.Context, i int) error {
		return sd.starts.send(ids[i], func() error {
			_, err := sendTurn(ctx, senders[i], ids[i], prompt(ntok, delay, ids[i]))
			return err
		})
	}
	sd.lost = func() int { return aw.gaps }
	return sd, nil
}

// bareMix sets up the same clients on the bare baseline.
func (b *bench) bareMix(ctx context.Context, t target, n, ntok int, delay time.Duration, withSSE, withAll bool, subsPerRun int) (*side, error) {
	sd := &side{name: "bare", t: t, starts: newTurnStarts()}
	keys := make([]string, n)
	aw := &allWatcher{sinks: map[string]*sink{}}
	tag := newRunTag()
	for i := range n {
		keys[i] = fmt.Sprintf("b%s-%d", tag, i)
		if withAll {
			s := newSink(keys[i], b.fake)
			aw.sinks[keys[i]] = s
			sd.sinks = append(sd.sinks, s)
		}
	}
	if withAll {
		ws, err := dialWS(ctx, wsURL(t.URL(), "/ws"), aw.on)
		if err != nil {
			return nil, err
		}
		sd.closers = append(sd.closers, ws.Close)
	}
	var mu sync.Mutex
	err := parallel(ctx, n*subsPerRun, 32, func(ctx context.Context, j int) error {
		i := j % n
		s := newSink(keys[i], b.fake)
		ws, err := watchWS(ctx, wsURL(t.URL(), "/ws?run="+keys[i]), s)
		if err != nil {
			return err
		}
		mu.Lock()
		sd.closers = append(sd.closers, ws.Close)
		sd.sinks = append(sd.sinks, s)
		if j < n {
			sd.starts.watch(keys[i], s)
		}
		mu.Unlock()
		if !withSSE || j >= n {
			return nil
		}
		s2 := newSink(keys[i], b.fake)
		sse, err := b.watchSSE(ctx, t.URL()+"/sse?run="+keys[i], s2)
		if err != nil {
			return err
		}
		mu.Lock()
		sd.closers = append(sd.closers, sse.Close)
		sd.sinks = append(sd.sinks, s2)
		mu.Unlock()
		return nil
	})
	if err != nil {
		sd.close()
		return nil, err
	}
	// The bare server registers a WebSocket subscriber just after the
	// handshake; give the last ones a moment.
	time.Sleep(100 * time.Millisecond)
	sd.send = func(ctx context.Context, i int) error {
		return sd.starts.send(keys[i], func() error {
			return b.bareSend(ctx, t.URL(), keys[i], prompt(ntok, delay, keys[i]))
		})
	}
	sd.lost = func() int { return int(bareDropped(ctx, b.hc, t.URL())) }
	return sd, nil
}

// parallel runs fn(0…n-1) on at most workers goroutines and returns the
// first error.
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := fn(ctx, j); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for j := range n {
		select {
		case jobs <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return context.Cause(ctx)
}

// mix: many concurrent turns at a human rate, each watched by a WebSocket
// and an SSE client, plus one client of all events.
func (b *bench) mix(ctx context.Context) error {
	n, ntok, delay := b.sz.MixTurns, b.sz.MixTokens, b.sz.MixDelay
	bare, err := b.mixOn(ctx, "bare")
	if err != nil {
		return err
	}
	ag, err := b.mixOn(ctx, string(envMode()))
	if err != nil {
		return err
	}
	b.heap("mix") // what the process allocated in all, in its alloc_space
	cores := float64(numCPU())
	pctSelf := func(r loadResult) float64 { return 100 * r.selfCPU.Seconds() / (r.wall.Seconds() * cores) }
	note := fmt.Sprintf("%d turns × %d tokens at %.0f tokens/s, %d WS + %d SSE + 1 all-events client; over %.1f s; the load generator used %.0f%% (bare run) and %.0f%% (agentik run)",
		n, ntok, float64(time.Second)/float64(delay), n, n, ag.wall.Seconds(), pctSelf(bare), pctSelf(ag))
	b.add(Row{Scenario: "mix", Metric: fmt.Sprintf("server CPU, %% of %d cores", int(cores)), Unit: "%", Bare: serverPct(bare), Agentik: serverPct(ag), Target: "≤ 50%", Note: note},
		func(r Row) bool { return r.Agentik <= 50 })
	b.add(Row{Scenario: "mix", Metric: "token delivery p99, model write → client read", Unit: "ms", Bare: quantileMS(bare.lat, 0.99), Agentik: quantileMS(ag.lat, 0.99), Target: "≤ 50 ms",
		Note: fmt.Sprintf("%d samples; max %.1f ms", len(ag.lat), quantileMS(ag.lat, 1))}, func(r Row) bool { return r.Agentik <= 50 })
	b.add(Row{Scenario: "mix", Metric: fmt.Sprintf("token delivery p99, tokens after the first %d of a turn", steadyAfter), Unit: "ms", Bare: quantileMS(bare.steady, 0.99), Agentik: quantileMS(ag.steady, 0.99),
		Note: fmt.Sprintf("steady state; the machine was %.0f%% busy during the bare run, %.0f%% during agentik's (other processes included)", bare.machine, ag.machine)}, nil)
	b.add(Row{Scenario: "mix", Metric: "token delivery p50", Unit: "ms", Bare: quantileMS(bare.lat, 0.5), Agentik: quantileMS(ag.lat, 0.5)}, nil)
	b.add(Row{Scenario: "mix", Metric: fmt.Sprintf("token delivery p99, a turn's first %d tokens (one watcher a turn)", steadyAfter), Unit: "ms", Bare: bare.split.start[1], Agentik: ag.split.start[1],
		Note: "agentik: " + ag.split.note(true) + "; bare: " + bare.split.note(false)}, nil)
	b.add(Row{Scenario: "mix", Metric: "events lost, duplicated or out of order", Unit: "count", Bare: float64(bare.lost), Agentik: float64(ag.lost), Target: "0",
		Note: fmt.Sprintf("every client's text compared with the model's; the all-events stream's seqs gapless; %d tokens unstamped", ag.unstamp+bare.unstamp)},
		func(r Row) bool { return r.Agentik == 0 })
	return nil
}

// serverPct is a load's server CPU in % of all cores over its wall time.
func serverPct(r loadResult) float64 {
	return 100 * r.cpu.Seconds() / (r.wall.Seconds() * float64(numCPU()))
}

// mixOn measures the mix on one side: "bare", or agentik in that store
// mode ("fast" or "plain"), and keeps the result in b.mixRuns.
func (b *bench) mixOn(ctx context.Context, side string) (loadResult, error) {
	n, ntok, delay := b.sz.MixTurns, b.sz.MixTokens, b.sz.MixDelay
	var (
		t     target
		err   error
		setup = b.agentikMix
	)
	if side == "bare" {
		t, err = startBare(ctx, b.fake.URL)
		setup = b.bareMix
	} else {
		t, err = b.agentik(ctx, "mix-"+side+".db", modeEnv(side))
	}
	if err != nil {
		return loadResult{}, err
	}
	defer t.Close()
	sd, err := setup(ctx, t, n, ntok, delay, true, true, 1)
	if err != nil {
		return loadResult{}, err
	}
	defer sd.close()
	name := sd.name
	if side != "bare" {
		name += " (" + side + ")"
	}
	b.progress("mix %s: %d turns × %d tokens at %.0f tokens/s, %d clients", name, n, ntok, float64(time.Second)/float64(delay), 2*n+1)
	res, err := b.drive(ctx, sd, n, ntok, delay)
	if err != nil {
		return res, err
	}
	if side != "bare" {
		if err := checkMode(filepath.Join(b.dir, "mix-"+side+".db"), store.Mode(side)); err != nil {
			return res, err
		}
	}
	if b.mixRuns == nil {
		b.mixRuns = map[string]loadResult{}
	}
	b.mixRuns[side] = res
	return res, nil
}
