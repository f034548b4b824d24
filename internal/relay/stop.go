package relay

import (
	"context"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/sse"
)

// DefaultStopGrace is how long a turn whose stream's client left goes on
// before it stops, unless the client resumes the stream (a reload with
// useChat({resume: true}) asks within it) or sends again.
const DefaultStopGrace = 3 * time.Second

// Stops makes a front-end client's leaving a stop: the AI SDK's Stop
// (useChat's stop()) and AG-UI's abortRun are nothing but the abort of
// the request whose stream the client reads, and a reload aborts it too.
// So a turn whose client left mid-stream stops after a grace, unless a
// client reads its stream again by then (Reading), and at once when it
// sends again (Take), so that the next send is never busy. One Stops serves one
// protocol; its waits are streams of the server's Group, which ends them
// on shutdown.
type Stops struct {
	grace   time.Duration
	streams *sse.Group
	runner  *agent.Runner
	convs   *agent.Conversations

	mu      sync.Mutex
	pending map[string]*left
	readers map[string]int           // streams being read, by conversation id
	idle    map[string]chan struct{} // closed when id's last stream ends
}

type left struct {
	turnSeq int64
	key     string // the id of the message that started the turn
	ctx     context.Context
	cancel  chan struct{}
}

// NewStops makes a Stops; grace ≤ 0 is DefaultStopGrace.
func NewStops(grace time.Duration, streams *sse.Group, runner *agent.Runner, convs *agent.Conversations) *Stops {
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	return &Stops{grace: grace, streams: streams, runner: runner, convs: convs, pending: map[string]*left{}, readers: map[string]int{}, idle: map[string]chan struct{}{}}
}

// Left records that the client of conversation id's turn (whose first
// event has turnSeq, started by the message whose client id is key) left
// before its stream ended: after the grace the turn stops. ctx is the
// request's (its principal is the caller's); its end is not the wait's.
func (s *Stops) Left(ctx context.Context, id string, turnSeq int64, key string) {
	if !s.streams.Hold() {
		return // shutting down: the runner drains the turn
	}
	l := &left{turnSeq: turnSeq, key: key, ctx: context.WithoutCancel(ctx), cancel: make(chan struct{})}
	s.mu.Lock()
	if old := s.pending[id]; old != nil {
		close(old.cancel)
	}
	s.pending[id] = l
	s.mu.Unlock()
	go func() {
		defer s.streams.Release()
		t := time.NewTimer(s.grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.cancel:
			return
		case <-s.streams.Closing():
			return
		}
		if s.take(id, l) {
			_ = s.stop(l.ctx, id, l.turnSeq) // a turn that ended meanwhile is left alone
		}
	}()
}

// Reading counts a stream of conversation id from its start until the
// returned func is called: while one is read (a reload's resume came,
// perhaps before the server saw the first stream go), nobody left.
func (s *Stops) Reading(id string) (done func()) {
	s.mu.Lock()
	if s.readers[id]++; s.readers[id] == 1 {
		s.idle[id] = make(chan struct{})
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.readers[id]--; s.readers[id] == 0 {
			delete(s.readers, id)
			close(s.idle[id])
			delete(s.idle, id)
		}
	}
}

// Take is called before a new request of conversation id starts a turn
// with the message whose client id is key: a turn whose client left stops
// now (and Take waits for its end), so the new one is not refused as
// busy. The same message again (a retry) is the client coming back.
// A client that aborts and sends at once may be faster than the server's
// noticing that the first request went: while a stream of id is still
// read, Take waits for it to end (up to the grace) before it looks.
func (s *Stops) Take(ctx context.Context, id, key string) error {
	s.mu.Lock()
	l := s.pending[id]
	if idle := s.idle[id]; l == nil && idle != nil {
		s.mu.Unlock()
		t := time.NewTimer(s.grace)
		select {
		case <-idle:
		case <-t.C: // still read (another tab's resume): the send may be busy
		case <-ctx.Done():
		}
		t.Stop()
		s.mu.Lock()
		l = s.pending[id]
	}
	if l != nil {
		close(l.cancel)
		delete(s.pending, id)
	}
	s.mu.Unlock()
	if l == nil || key != "" && key == l.key {
		return nil
	}
	return s.stop(ctx, id, l.turnSeq)
}

// take removes l, the pending leave of id, and reports whether it was
// still pending with no stream of id read meanwhile.
func (s *Stops) take(id string, l *left) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] != l {
		return false
	}
	delete(s.pending, id)
	return s.readers[id] == 0
}

// stop interrupts conversation id's turn whose first event has turnSeq,
// if it still runs (a turn that ended meanwhile, or a later one, is left
// alone), as the caller in ctx.
func (s *Stops) stop(ctx context.Context, id string, turnSeq int64) error {
	c, err := s.convs.Get(ctx, id)
	if err != nil || !c.Running || c.TurnSeq != turnSeq {
		return err
	}
	_, err = s.runner.Interrupt(ctx, id)
	return err
}
