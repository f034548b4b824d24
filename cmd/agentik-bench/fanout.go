package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/protocol"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func numCPU() int { return runtime.NumCPU() }

// bareDropped asks the bare server how many frames it dropped.
func bareDropped(ctx context.Context, hc *http.Client, root string) int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/dropped", nil)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// fanout: one turn watched by many WebSocket subscribers.
func (b *bench) fanout(ctx context.Context) error {
	subs, ntok, delay := b.sz.FanoutSubs, b.sz.FanoutTokens, b.sz.FanoutDelay
	measure := func(mk func() (target, error), setup func(context.Context, target, int, int, time.Duration, bool, bool, int) (*side, error)) (loadResult, error) {
		t, err := mk()
		if err != nil {
			return loadResult{}, err
		}
		defer t.Close()
		sd, err := setup(ctx, t, 1, ntok, delay, false, false, subs)
		if err != nil {
			return loadResult{}, err
		}
		defer sd.close()
		b.progress("fanout %s: 1 turn × %d tokens to %d WebSocket subscribers", sd.name, ntok, subs)
		return b.drive(ctx, sd, 1, ntok, delay)
	}
	bare, err := measure(func() (target, error) { return startBare(ctx, b.fake.URL) }, b.bareMix)
	if err != nil {
		return err
	}
	ag, err := measure(func() (target, error) { return b.agentik(ctx, "fanout.db") }, b.agentikMix)
	if err != nil {
		return err
	}
	perEvent := func(r loadResult) float64 { return float64(r.cpu.Microseconds()) / float64(max(1, r.received)) }
	note := fmt.Sprintf("%d subscribers × %d tokens at %.0f tokens/s", subs, ntok, float64(time.Second)/float64(delay))
	b.add(Row{Scenario: "fanout", Metric: "server CPU per delivered event", Unit: "µs", Bare: perEvent(bare), Agentik: perEvent(ag), Note: note}, nil)
	b.add(Row{Scenario: "fanout", Metric: "token delivery p99", Unit: "ms", Bare: quantileMS(bare.lat, 0.99), Agentik: quantileMS(ag.lat, 0.99),
		Note: fmt.Sprintf("%d samples; lost/out of order: bare %d, agentik %d; machine %.0f%% / %.0f%% busy", len(ag.lat), bare.lost, ag.lost, bare.machine, ag.machine)}, nil)
	if ag.lost > 0 {
		return fmt.Errorf("fanout: agentik lost %d events", ag.lost)
	}
	return nil
}

// idle: many connected clients that wait. The bare server and agentik
// are measured at once, each with its own connections (what is measured
// is each process's own memory and CPU while its connections idle): one
// after the other, the bare side's dials and windows came first in the
// scenario's time. Both sides' connections open first, then both settle
// and are measured over the same window. Profiled (-memprofile: agentik
// in this process, its heap written at the measured moment) the sides
// run one after the other, so that the heap holds agentik's connections
// only.
func (b *bench) idle(ctx context.Context) error {
	n := b.sz.IdleConns
	type idleResult struct {
		rssPerConn float64 // bytes
		cpuPct     float64 // % of one core while idle
	}
	// measure opens the connections of t, waits at opened until every
	// side opened theirs, and measures.
	measure := func(t target, url string, subscribe bool, opened func()) (idleResult, error) {
		var res idleResult
		rss0 := t.RSS()
		var mu sync.Mutex
		var conns []*wsClient
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		err := parallel(ctx, n, 16, func(ctx context.Context, _ int) error {
			ws, err := dialWS(ctx, url, nil)
			if err != nil {
				return err
			}
			mu.Lock()
			conns = append(conns, ws)
			mu.Unlock()
			if subscribe {
				_, err = ws.subscribe(ctx, "agent", "", -1)
			}
			return err
		})
		opened()
		if err != nil {
			return res, err
		}
		window := b.sz.IdleWindow
		time.Sleep(min(time.Second, window)) // let the server settle
		c0 := t.CPU()
		time.Sleep(window)
		res.cpuPct = 100 * (t.CPU() - c0).Seconds() / window.Seconds()
		res.rssPerConn = float64(t.RSS()-rss0) / float64(n)
		if subscribe {
			b.heap("idle")
		}
		// Every connection must still work.
		if len(conns) > 0 && subscribe {
			if err := conns[len(conns)-1].call(ctx, protocol.Command{Op: protocol.OpPing}, nil); err != nil {
				return res, err
			}
		}
		return res, nil
	}
	bt, err := startBare(ctx, b.fake.URL)
	if err != nil {
		return err
	}
	defer bt.Close()
	var (
		bare, ag idleResult
		errs     [2]error
	)
	runBare := func(opened func()) {
		b.progress("idle bare: %d WebSocket connections", n)
		bare, errs[0] = measure(bt, wsURL(bt.URL(), "/ws?run=idle"), false, opened)
	}
	runAgentik := func(at target, opened func()) {
		b.progress("idle agentik: %d WebSocket connections, each subscribed to the agent stream", n)
		ag, errs[1] = measure(at, wsURL(at.URL(), "/agentik/ws"), true, opened)
	}
	if b.inproc {
		runBare(func() {})
		bt.Close()
		if errs[0] != nil {
			return errs[0]
		}
	}
	at, err := b.agentik(ctx, "idle.db")
	if err != nil {
		return err
	}
	defer at.Close()
	if b.inproc {
		runAgentik(at, func() {})
	} else {
		var opened, wg sync.WaitGroup
		opened.Add(2)
		barrier := func() { opened.Done(); opened.Wait() }
		wg.Go(func() { runBare(barrier) })
		wg.Go(func() { runAgentik(at, barrier) })
		wg.Wait()
	}
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	b.add(Row{Scenario: "idle", Metric: "server memory per idle connection (RSS)", Unit: "KiB", Bare: bare.rssPerConn / 1024, Agentik: ag.rssPerConn / 1024,
		Note: fmt.Sprintf("%d connections", n)}, nil)
	b.add(Row{Scenario: "idle", Metric: "server CPU while idle", Unit: "% of a core", Bare: bare.cpuPct, Agentik: ag.cpuPct, Note: fmt.Sprintf("%s window", b.sz.IdleWindow)}, nil)
	return nil
}
