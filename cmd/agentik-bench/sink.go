package main

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// sink is one client's view of one run: the text it read, its events,
// and, when fed stamps, the delivery latency of every token. It is fed
// by one reader goroutine; read it after done (or caughtUp) is closed.
type sink struct {
	key string // the run's stamp key
	f   *fake  // nil: no latencies

	text     strings.Builder
	events   int // append_text events
	lat      []time.Duration
	unstamp  int   // tokens whose write time is unknown
	lastSeq  int64 // highest seq seen
	disorder int   // events whose seq was not above the previous one
	msgText  string
	caughtAt int64 // caught_up seq

	done     chan struct{} // end event seen
	caught   chan struct{} // caught_up seen
	doneOnce sync.Once
	caughtO  sync.Once
}

func newSink(key string, f *fake) *sink {
	return &sink{key: key, f: f, done: make(chan struct{}), caught: make(chan struct{})}
}

// add takes one event; seq is 0 when the transport has none (SSE data,
// the bare baseline).
func (s *sink) add(ev *wireInner, seq int64, at time.Time) {
	if seq != 0 {
		if seq <= s.lastSeq {
			s.disorder++
		}
		s.lastSeq = seq
	}
	switch ev.Type {
	case agent.EventAppendText:
		s.events++
		s.text.WriteString(ev.Text)
		if s.f != nil {
			for _, tok := range strings.Fields(ev.Text) {
				if t, ok := s.f.stamp(s.key, tokenIndex(tok)); ok {
					s.lat = append(s.lat, at.Sub(t))
				} else {
					s.unstamp++
				}
			}
		}
	case agent.EventMessage:
		if m := ev.Message; m != nil && m.Type == agent.MessageAssistant {
			for _, c := range m.Content {
				s.msgText += c.Body
			}
		}
	case agent.EventEnd:
		s.doneOnce.Do(func() { close(s.done) })
	}
}

// caughtUp marks the caught_up frame.
func (s *sink) caughtUp(seq int64) {
	s.caughtAt = seq
	s.caughtO.Do(func() { close(s.caught) })
}

// quantile of ds (sorted in place), in milliseconds.
func quantileMS(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q * float64(len(ds)-1))
	return float64(ds[i]) / float64(time.Millisecond)
}

// median of xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
