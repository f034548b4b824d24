package relay

import (
	"context"
	"errors"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/sse"
)

// Frame is one frame of a followed stream: an SSE frame with an id (a
// seq, or else ID; 0 and "" leave it out), an event name ("" leaves it
// out) and data.
type Frame struct {
	Seq   int64
	ID    string
	Event string
	Data  []byte
}

// Data is a frame of data only (OpenAI's chunks, the AI SDK's "[DONE]").
func Data(b []byte) Frame { return Frame{Data: b} }

// Projection is what a protocol says about a followed stream: how each
// event becomes frames, and when the stream is complete. It is fed every
// event of the subscription, in order, as stored (Decode reads a
// conversation's event; Events adapts a projection of decoded ones).
type Projection interface {
	Event(e *agent.Encoded) (frames []Frame, done bool)
}

// ProjectionFunc is a func as a Projection.
type ProjectionFunc func(e *agent.Encoded) ([]Frame, bool)

// Event calls f.
func (f ProjectionFunc) Event(e *agent.Encoded) ([]Frame, bool) { return f(e) }

// Events is a projection of a conversation's decoded events: events of
// other kinds, and those that do not decode, are skipped.
func Events(f func(ev *agent.Event) ([]Frame, bool)) Projection {
	return ProjectionFunc(func(e *agent.Encoded) ([]Frame, bool) {
		ev, ok := Event(e)
		if !ok {
			return nil, false
		}
		return f(ev)
	})
}

// Parker is a Projection whose stream also ends when its turn parks on
// the approvals it asked for (the AI SDK's, AG-UI's and the Responses
// API's, an MCP call's input_required): when nothing more is ready and
// it is Asking, Follow reads the calls the conversation waits on
// (Follow.Waiting, when set) and asks Parked for the frames that end the
// stream (ok false: it goes on).
type Parker interface {
	Projection
	Asking() bool
	Parked(waiting []string) (frames []Frame, ok bool)
}

// Replayer is a Projection told when a subscription that replays stored
// events has delivered them all: what follows is live.
type Replayer interface {
	Projection
	CaughtUp()
}

// Sink is where a Follow's frames go: an SSE stream (SSE), or nowhere
// (Discard: a turn followed to its end for its result alone). Frames and
// comments are queued, and written at Flush.
type Sink interface {
	Frame(f Frame)
	Comment(text string)
	Buffered() int
	Flush() error
}

// SSE is an SSE stream as a Sink.
func SSE(w *sse.Writer) Sink { return sseSink{w} }

type sseSink struct{ w *sse.Writer }

func (s sseSink) Frame(f Frame) {
	switch {
	case f.ID != "":
		s.w.Event(f.ID, f.Event, f.Data)
	case f.Seq == 0 && f.Event == "":
		s.w.Data(f.Data)
	default:
		s.w.Seq(f.Seq, f.Event, f.Data)
	}
}
func (s sseSink) Comment(text string) { s.w.Comment(text) }
func (s sseSink) Buffered() int       { return s.w.Buffered() }
func (s sseSink) Flush() error        { return s.w.Flush() }

// Discard is a Sink that drops everything.
var Discard Sink = discard{}

type discard struct{}

func (discard) Frame(Frame)    {}
func (discard) Comment(string) {}
func (discard) Buffered() int  { return 0 }
func (discard) Flush() error   { return nil }

// ErrLeft is Run's error when the client left: its request ended or a
// write to it failed.
var ErrLeft = errors.New("the client left")

// ErrShuttingDown is Run's error when the server shuts down.
var ErrShuttingDown = sse.ErrShuttingDown

// Sub is a subscription to the events a Follow reads: one conversation's
// (or, for agentik's own event routes, another broker stream's), from a
// position. Protocol packages subscribe here, never to the broker itself
// (internal/arch TestProtocolsFollow).
type Sub struct {
	b      *broker.Broker
	stream broker.Stream
	sub    *broker.Sub
}

// Subscribe subscribes to stream's events after seq after (< 0: live
// only, as for a temp conversation, which is never stored: subscribe
// before its turn starts). Its errors are the broker's (a
// *broker.ResyncError when after is pruned or ahead of the log).
func Subscribe(ctx context.Context, b *broker.Broker, stream broker.Stream, after int64) (*Sub, error) {
	s, err := b.Subscribe(ctx, stream, after, "")
	if err != nil {
		return nil, err
	}
	return &Sub{b: b, stream: stream, sub: s}, nil
}

// Conversation subscribes to conversation id's events after seq after.
func Conversation(ctx context.Context, b *broker.Broker, id string, after int64) (*Sub, error) {
	return Subscribe(ctx, b, broker.Stream{Kind: broker.StreamConversation, ConversationID: id}, after)
}

// Head is the highest seq committed when the subscription started.
func (s *Sub) Head() int64 { return s.sub.Head }

// Close ends the subscription.
func (s *Sub) Close() { s.sub.Close() }

// batchBytes is how much a stream queues before it flushes while events
// are still ready.
const batchBytes = 64 << 10

// Follow follows a subscription onto a Sink through a Projection: the one
// loop every protocol stream runs (docs/ARCHITECTURE.md "Following a
// turn"). What is ready goes out in one flush (up to batchBytes); an idle
// stream gets a comment every Heartbeat; it ends when the projection is
// done, the client leaves (ctx, or a failed write), the server shuts down
// (Closing: what is ready then is written first), or the subscription
// fails. The turn itself goes on: it is the Runner's.
type Follow struct {
	Sink Sink // nil: Discard
	// Heartbeat is how long a stream may be idle before a comment is
	// written (0: never); Ticker makes its ticks (nil: time.NewTicker),
	// which a test injects. A stream is idle when nothing was written
	// since the previous tick, so an idle stream gets a comment within
	// two intervals of its last write.
	Heartbeat time.Duration
	Ticker    func(d time.Duration) (tick <-chan time.Time, stop func())
	Comment   string          // the heartbeat's text; "keepalive" when empty
	Closing   <-chan struct{} // closed on shutdown
	// Waiting reads the calls the conversation waits on, for a Parker.
	Waiting func(ctx context.Context) ([]string, error)
	// UntilCaughtUp ends the follow, without error, once the stored
	// events, and what was ready after them, are delivered (a replay that
	// computes a view; the Sub stays open, to be followed on live).
	UntilCaughtUp bool
	// Resume, when set, resubscribes a subscription dropped for falling
	// behind from its last event, instead of failing (the events are
	// stored, so nothing is lost).
	Resume bool
	// Cut returns the frames that end a stream whose subscription failed
	// (a resync: the client resumes as its protocol does); nil: none.
	Cut func(err error) []Frame
	// Last are the frames after a complete stream (the AI SDK's [DONE]).
	Last []Frame
}

// Run follows s until the stream ends: nil when the projection is done
// (or, UntilCaughtUp, the replay is), ErrLeft when the client left,
// ErrShuttingDown on shutdown, else the subscription's error. It does not
// close s.
func (f Follow) Run(ctx context.Context, s *Sub, p Projection) error {
	out := f.Sink
	if out == nil {
		out = Discard
	}
	var tick <-chan time.Time
	if f.Heartbeat > 0 {
		ticker := f.Ticker
		if ticker == nil {
			ticker = func(d time.Duration) (<-chan time.Time, func()) {
				t := time.NewTicker(d)
				return t.C, t.Stop
			}
		}
		c, stop := ticker(f.Heartbeat)
		defer stop()
		tick = c
	}
	comment := f.Comment
	if comment == "" {
		comment = "keepalive"
	}
	wrote := false    // since the last tick
	caughtUp := false // the stored events were delivered
	flush := func() error {
		if out.Buffered() == 0 {
			return nil
		}
		wrote = true
		if out.Flush() != nil {
			return ErrLeft
		}
		return nil
	}
	queue := func(fs []Frame) {
		for _, fr := range fs {
			out.Frame(fr)
		}
	}
	done := func() error {
		queue(f.Last)
		return flush()
	}
	// next is the subscription's next event, resumed when it fell behind.
	next := func() (broker.Item, bool, error) {
		for {
			it, ok, err := s.sub.TryNext(ctx)
			var re *broker.ResyncError
			if !f.Resume || !errors.As(err, &re) || re.Reason != broker.ReasonSlowConsumer || re.After <= 0 {
				return it, ok, err
			}
			s.sub.Close()
			sub, err := s.b.Subscribe(ctx, s.stream, re.After, "")
			if err != nil {
				return broker.Item{}, false, err
			}
			s.sub = sub
		}
	}
	// step takes what is ready, up to a batch: end when the stream ends
	// (err then says how), more when more may be ready.
	step := func() (end bool, more bool, err error) {
		for out.Buffered() < batchBytes {
			it, ok, err := next()
			if err != nil {
				if ctx.Err() != nil {
					return true, false, ErrLeft
				}
				if f.Cut != nil {
					queue(f.Cut(err))
				}
				_ = flush()
				return true, false, err
			}
			if !ok {
				return false, false, nil
			}
			if it.CaughtUp {
				caughtUp = true
				if r, ok := p.(Replayer); ok {
					r.CaughtUp()
				}
				continue
			}
			fs, complete := p.Event(it.Event)
			queue(fs)
			if complete {
				return true, false, done()
			}
		}
		return false, true, nil
	}
	for {
		select {
		case <-f.Closing:
			// What was committed before the shutdown may be ready now
			// (the end of a turn the drain let finish): write it.
			for {
				end, more, err := step()
				if ferr := flush(); end || ferr != nil {
					if err == nil && ferr == nil {
						return nil
					}
					return ErrShuttingDown
				}
				if !more {
					return ErrShuttingDown
				}
			}
		case <-ctx.Done():
			return ErrLeft
		default:
		}
		end, more, err := step()
		if end {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if more {
			continue
		}
		if pk, ok := p.(Parker); ok && pk.Asking() {
			// Nothing more for now: the round may be parked.
			var waiting []string
			if f.Waiting != nil {
				if waiting, err = f.Waiting(ctx); err != nil {
					if ctx.Err() != nil {
						return ErrLeft
					}
					return err
				}
			}
			if fs, ok := pk.Parked(waiting); ok {
				queue(fs)
				return done()
			}
		}
		if f.UntilCaughtUp && caughtUp {
			return nil
		}
		select {
		case <-f.Closing:
		case <-ctx.Done():
			return ErrLeft
		case <-tick:
			if !wrote {
				out.Comment(comment)
				if err := flush(); err != nil {
					return err
				}
			}
			wrote = false
		case <-s.sub.Ready():
		}
	}
}
