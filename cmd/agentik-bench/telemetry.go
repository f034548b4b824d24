package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// otlpSink is an OTLP/HTTP trace receiver that accepts every export and
// discards it, counting requests and bytes: tracing on costs agentik what
// a real collector on loopback would, and the counts show that spans were
// exported.
type otlpSink struct {
	url             string
	srv             *http.Server
	done            chan struct{}
	requests, bytes atomic.Int64
}

func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlp sink: %w", err)
	}
	s := &otlpSink{url: "http://" + ln.Addr().String(), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.requests.Add(1)
		s.bytes.Add(n)
		// An empty ExportTraceServiceResponse is zero protobuf bytes.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ends with Close
	}()
	return s, nil
}

func (s *otlpSink) Close() {
	_ = s.srv.Close()
	<-s.done
}

// traceEnv turns tracing on in an agentik child, exporting to s. The
// batch span processor exports every 500 ms (not the default 5 s) so that
// nearly all of a run's exports fall inside its measured window.
func (s *otlpSink) traceEnv() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + s.url, "OTEL_SERVICE_NAME=agentik-bench", "OTEL_BSP_SCHEDULE_DELAY=500"}
}

// telemetrySettle is how long a run's CPU keeps being counted after its
// last client saw its end: the last batch of spans is exported in it.
const telemetrySettle = time.Second

// telemetry runs the mix on two agentik processes at once, tracing off
// on one and on on the other (metrics are always on in cmd/agentik: there
// is no switch to measure them against), and compares the two servers'
// CPU time for the same work. Driven at once, the two processes share
// every moment of the machine's load, where one after the other (the
// ABBA order of one process a run this replaced) a drift between two
// runs of a few seconds fell on one side: 0.93–1.09× over fifteen runs of
// the same code. Each round is a fresh mix on the same two processes.
func (b *bench) telemetry(ctx context.Context) error {
	if b.inproc {
		b.progress("telemetry: skipped: it needs the agentik binary (tracing is wired by cmd/agentik), not agentik in this process")
		return nil
	}
	sink, err := startOTLPSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	n, ntok, delay := b.sz.MixTurns, b.sz.TelemetryTokens, b.sz.MixDelay
	var procs [2]*proc // tracing off, on
	for i, tracing := range []bool{false, true} {
		var env []string
		if tracing {
			env = sink.traceEnv()
		}
		p, err := startAgentik(ctx, b.bin, filepath.Join(b.dir, fmt.Sprintf("telemetry%d.db", i)), b.fake.URL, env...)
		if err != nil {
			return err
		}
		defer p.Close()
		procs[i] = p
	}
	var (
		cpu       [2]time.Duration
		lost, lat int
	)
	req0 := sink.requests.Load()
	for round := range b.sz.TelemetryRounds {
		var sds [2]*side
		for i, p := range procs {
			sd, err := b.agentikMix(ctx, p, n, ntok, delay, true, true, 1)
			if err != nil {
				return err
			}
			defer sd.close()
			sd.name = fmt.Sprintf("tracing %s", map[bool]string{false: "off", true: "on"}[i == 1])
			sds[i] = sd
		}
		b.progress("telemetry round %d: the mix with tracing off and on, at once", round+1)
		var (
			c0   [2]time.Duration
			res  [2]loadResult
			errs [2]error
			wg   sync.WaitGroup
		)
		for i, p := range procs {
			c0[i] = p.CPU()
		}
		for i := range procs {
			wg.Go(func() { res[i], errs[i] = b.drive(ctx, sds[i], n, ntok, delay) })
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			return err
		}
		time.Sleep(telemetrySettle)
		for i, p := range procs {
			cpu[i] += p.CPU() - c0[i]
			lost += res[i].lost
			lat += len(res[i].lat)
		}
		for _, sd := range sds {
			sd.close()
		}
	}
	off, on := cpu[0], cpu[1]
	reqs, kb := sink.requests.Load()-req0, float64(sink.bytes.Load())/1024
	if reqs == 0 {
		return errors.New("telemetry: tracing on exported no spans to the OTLP sink")
	}
	if lost != 0 {
		return fmt.Errorf("telemetry: %d events lost, duplicated or out of order", lost)
	}
	b.add(Row{Scenario: "telemetry", Metric: "mix server CPU time, tracing on (agentik column) vs off (bare column)", Unit: "CPU s",
		Bare: off.Seconds(), Agentik: on.Seconds(), Target: "≤ 1.03×",
		Note: fmt.Sprintf("the mix (%d turns × %d tokens) %d times each way on two agentik processes driven at once (one tracing off, one on), summed; metrics on in both (cmd/agentik always serves them); %d OTLP/HTTP exports (%.0f KiB) to an in-bench receiver that discards them; %d samples, 0 lost",
			n, ntok, b.sz.TelemetryRounds, reqs, kb, lat)},
		func(r Row) bool { return r.Ratio <= 1.03 })
	return nil
}
