// Package relay streams one turn of a conversation, as the broker delivers
// its events, through a protocol's projection onto an SSE stream: the loop
// the front-end protocols (internal/aisdk, internal/agui) share. It writes
// what is ready in one flush, keeps an idle stream alive with comments,
// ends a stream whose turn parks on approvals, and stops when the client
// leaves or the server shuts down (the turn itself goes on: it is the
// Runner's).
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/sse"
)

// batchBytes is how much a stream queues before it flushes while events
// are still ready.
const batchBytes = 64 << 10

// Frames is a protocol's events (AI SDK chunks, AG-UI events) as JSON data
// frames, in order; nil for none. The events are the protocol's own
// structs, which always marshal.
func Frames[T any](evs []T) [][]byte {
	var out [][]byte
	for _, e := range evs {
		b, _ := json.Marshal(e)
		out = append(out, b)
	}
	return out
}

// Projection turns a turn's events into a protocol's data frames. It is
// fed every conversation event of the subscription, in order.
type Projection interface {
	// Event returns the frames of one event.
	Event(ev *agent.Event) [][]byte
	// Asking reports whether the stream asked for decisions not yet made
	// (then the turn may park, and Parked is asked).
	Asking() bool
	// Parked returns the frames that end the stream of a turn now waiting
	// for decisions on the calls of waiting, or nil while it must go on.
	Parked(waiting []string) [][]byte
	// Done reports that the stream is complete.
	Done() bool
}

// Stream is one relayed stream.
type Stream struct {
	Sub       *broker.Sub
	Writer    *sse.Writer
	Heartbeat time.Duration
	Closing   <-chan struct{} // closed on shutdown: the stream ends
	// Waiting reads the calls the conversation waits on (its Waiting).
	Waiting func(ctx context.Context) ([]string, error)
	// Behind is the frame sent when the subscription fell behind and was
	// dropped (the client resumes as its protocol does).
	Behind []byte
	// Last, when set, is the frame after a complete stream (the AI SDK's
	// [DONE]).
	Last []byte
}

// Run relays until the stream is done, the client leaves (ctx), or the
// server shuts down, and reports whether the client left before the
// stream was done. It does not close Sub.
func (s Stream) Run(ctx context.Context, p Projection) (left bool) {
	var cut bool // a write failed: the client is gone
	defer func() { left = !p.Done() && (cut || ctx.Err() != nil) }()
	beat := time.NewTicker(s.Heartbeat)
	defer beat.Stop()
	sw := s.Writer
	done := func() {
		if s.Last != nil {
			sw.Data(s.Last)
		}
		_ = sw.Flush()
	}
	for {
		it, ok, err := s.Sub.TryNext(ctx)
		if err != nil {
			var re *broker.ResyncError
			if errors.As(err, &re) && s.Behind != nil {
				sw.Data(s.Behind)
			}
			_ = sw.Flush()
			return
		}
		if ok {
			if it.CaughtUp || it.Event.Kind != agent.KindConversation {
				continue
			}
			all, err := Decode(it.Event)
			if err != nil || all.Event == nil {
				continue
			}
			for _, f := range p.Event(all.Event) {
				sw.Data(f)
			}
			if p.Done() {
				done()
				return
			}
			if sw.Buffered() < batchBytes {
				continue
			}
		}
		if sw.Flush() != nil {
			cut = true
			return
		}
		if ok {
			continue
		}
		if p.Asking() { // nothing more for now: the round may be parked
			waiting, err := s.Waiting(ctx)
			if err != nil {
				return
			}
			if fs := p.Parked(waiting); fs != nil {
				for _, f := range fs {
					sw.Data(f)
				}
				done()
				return
			}
		}
		select {
		case <-s.Closing:
			return
		case <-ctx.Done():
			return
		case <-beat.C:
			if sw.Idle() >= s.Heartbeat {
				sw.Comment("keepalive")
			}
		case <-s.Sub.Ready():
		}
	}
}
