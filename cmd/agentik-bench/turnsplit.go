package main

import (
	"fmt"
	"sync"
	"time"
)

// turnStarts splits the start of each of a load's turns into phases, to
// tell where a turn's first tokens lose time (issues 47 and 54: the mix's
// p99 tail sits in each turn's first ten tokens). Per run key it keeps
// when the bench sent the turn and when the send was answered, and the
// run's first watcher (its sink); the fake knows when the model request
// came and when each token was written.
type turnStarts struct {
	mu    sync.Mutex
	sent  map[string]time.Time
	acked map[string]time.Time
	sinks map[string]*sink // the run's first WebSocket watcher
}

func newTurnStarts() *turnStarts {
	return &turnStarts{sent: map[string]time.Time{}, acked: map[string]time.Time{}, sinks: map[string]*sink{}}
}

// watch makes s the watcher whose reads time key's turn.
func (ts *turnStarts) watch(key string, s *sink) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.sinks[key] == nil {
		ts.sinks[key] = s
	}
}

// send runs fn, the send of key's turn, and keeps its start and answer.
func (ts *turnStarts) send(key string, fn func() error) error {
	t0 := time.Now()
	err := fn()
	t1 := time.Now()
	ts.mu.Lock()
	ts.sent[key], ts.acked[key] = t0, t1
	ts.mu.Unlock()
	return err
}

// turnSplit is what a load's turn starts measured, over its turns: each
// a quantile in ms (0 when no turn had the phase).
type turnSplit struct {
	turns int
	// ack: send → its answer (the start records committed); request:
	// send → the model request at the fake; user: send → the user's
	// message read by the watcher.
	ack, request, user [2]float64 // p50, p99
	// resp: the first token written → start_response read; first: the
	// first token written → read; start: tokens 1…steadyAfter written →
	// read, of all turns.
	resp, first, start [2]float64
}

// split measures ts's turns with the stamps of f.
func (ts *turnStarts) split(f *fake) turnSplit {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var ack, req, user, resp, first, start []time.Duration
	for key, s := range ts.sinks {
		sent, ok := ts.sent[key]
		if !ok {
			continue
		}
		ack = append(ack, ts.acked[key].Sub(sent))
		if at, ok := f.requested(key); ok {
			req = append(req, at.Sub(sent))
		}
		if !s.userAt.IsZero() {
			user = append(user, s.userAt.Sub(sent))
		}
		w1, ok := f.stamp(key, 1)
		if !ok {
			continue
		}
		if !s.respAt.IsZero() {
			resp = append(resp, s.respAt.Sub(w1))
		}
		if !s.firstAt.IsZero() {
			first = append(first, s.firstAt.Sub(w1))
		}
		start = append(start, s.startLat...)
	}
	q := func(ds []time.Duration) [2]float64 { return [2]float64{quantileMS(ds, 0.5), quantileMS(ds, 0.99)} }
	return turnSplit{turns: len(ack), ack: q(ack), request: q(req), user: q(user), resp: q(resp), first: q(first), start: q(start)}
}

// note is sp as a row's note.
func (sp turnSplit) note(events bool) string {
	s := fmt.Sprintf("%d turns, p50/p99 ms: send → answered %.1f/%.1f, → model request %.1f/%.1f", sp.turns, sp.ack[0], sp.ack[1], sp.request[0], sp.request[1])
	if events {
		s += fmt.Sprintf(", → user message read %.1f/%.1f; first token written → start_response read %.1f/%.1f,", sp.user[0], sp.user[1], sp.resp[0], sp.resp[1])
	} else {
		s += ";"
	}
	return s + fmt.Sprintf(" first token written → read %.1f/%.1f; tokens 1–%d %.1f/%.1f (one watcher a turn)", sp.first[0], sp.first[1], steadyAfter, sp.start[0], sp.start[1])
}
