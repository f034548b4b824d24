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
	steady   []time.Duration // lat of tokens after a turn's first steadyAfter
	startLat []time.Duration // lat of a turn's first steadyAfter tokens
	unstamp  int             // tokens whose write time is unknown
	lastSeq  int64           // highest seq seen
	disorder int             // events whose seq was not above the previous one
	msgText  string
	caughtAt int64     // caught_up seq
	tokens   int       // tokens read so far
	lastAt   time.Time // when the last append_text event was read
	// When the turn's user message, its start_response and its first
	// append_text event were read (zero: not read): the turn start's
	// phases (turnsplit.go).
	userAt, respAt, firstAt time.Time
	// onTokens, if set, is called after each append_text event with the
	// number of tokens read so far.
	onTokens func(n int)

	done     chan struct{} // end event seen
	caught   chan struct{} // caught_up seen
	doneOnce sync.Once
	caughtO  sync.Once
}

// steadyAfter is how many tokens of a turn count as its start: the
// steady-state latency leaves them out.
const steadyAfter = 10

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
	case agent.EventStartResponse:
		if s.respAt.IsZero() {
			s.respAt = at
		}
	case agent.EventAppendText:
		s.events++
		s.lastAt = at
		if s.firstAt.IsZero() {
			s.firstAt = at
		}
		s.text.WriteString(ev.Text)
		toks := strings.Fields(ev.Text)
		s.tokens += len(toks)
		if s.onTokens != nil {
			defer s.onTokens(s.tokens)
		}
		if s.f != nil {
			for _, tok := range toks {
				k := tokenIndex(tok)
				if t, ok := s.f.stamp(s.key, k); ok {
					s.lat = append(s.lat, at.Sub(t))
					if k > steadyAfter {
						s.steady = append(s.steady, at.Sub(t))
					} else {
						s.startLat = append(s.startLat, at.Sub(t))
					}
				} else {
					s.unstamp++
				}
			}
		}
	case agent.EventMessage:
		if m := ev.Message; m != nil && m.Type == agent.MessageUser && s.userAt.IsZero() {
			s.userAt = at
		}
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

// cpuMarks samples a target's CPU when a stream passes 10, 30, 70 and 90 %
// of its n tokens, to compare the CPU per token late in an answer with
// early.
type cpuMarks struct {
	t     target
	marks [4]int
	at    [4]time.Duration
	next  int
	mu    sync.Mutex
}

func newCPUMarks(t target, n int) *cpuMarks {
	return &cpuMarks{t: t, marks: [4]int{n / 10, 3 * n / 10, 7 * n / 10, 9 * n / 10}}
}

// see is the sink's onTokens.
func (c *cpuMarks) see(seen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.next < len(c.marks) && seen >= c.marks[c.next] {
		c.at[c.next] = c.t.CPU()
		c.next++
	}
}

// perToken is the CPU µs per token early (10–30 %) and late (70–90 %).
func (c *cpuMarks) perToken() (early, late float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := float64(max(1, c.marks[1]-c.marks[0]))
	return float64((c.at[1] - c.at[0]).Microseconds()) / w, float64((c.at[3] - c.at[2]).Microseconds()) / w
}
