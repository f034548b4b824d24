// Package relay follows a turn of a conversation, as the broker delivers
// its events, through a protocol's projection onto a stream: Follow is
// the one loop every protocol stream runs (the OpenAI facade's chat
// completions and Responses, A2A, MCP, the AI SDK, AG-UI and agentik's
// own SSE routes). It writes what is ready in one flush, keeps an idle
// stream alive with comments, ends a stream whose turn parks on
// approvals, and stops when the client leaves or the server shuts down
// (the turn itself goes on: it is the Runner's). A protocol package
// subscribes through it (Subscribe), never to the broker itself.
package relay

import (
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// Frames is a protocol's events (AI SDK chunks, AG-UI events) as JSON data
// frames, in order; nil for none. The events are the protocol's own
// structs, which always marshal.
func Frames[T any](evs []T) []Frame {
	var out []Frame
	for _, e := range evs {
		b, _ := json.Marshal(e)
		out = append(out, Data(b))
	}
	return out
}

// Event is e's conversation event, decoded; false for an event of another
// kind or one that does not decode.
// Parts is the Parker of a protocol whose projection turns a decoded
// event into parts, each a JSON data frame (the AI SDK's chunks,
// AG-UI's events): On gives an event's parts, Done says the stream is
// over, Ask whether it asks the client something, Park the parts of a
// turn parked on approvals.
type Parts[T any] struct {
	On   func(ev *agent.Event) []T
	Done func() bool
	Ask  func() bool
	Park func(waiting []string) []T
}

// Event implements Projection.
func (p Parts[T]) Event(e *agent.Encoded) ([]Frame, bool) {
	ev, ok := Event(e)
	if !ok {
		return nil, false
	}
	return Frames(p.On(ev)), p.Done()
}

// Asking implements Parker.
func (p Parts[T]) Asking() bool { return p.Ask() }

// Parked implements Parker.
func (p Parts[T]) Parked(waiting []string) ([]Frame, bool) {
	fs := Frames(p.Park(waiting))
	return fs, fs != nil
}

func Event(e *agent.Encoded) (*agent.Event, bool) {
	if e.Kind != agent.KindConversation {
		return nil, false
	}
	all, err := Decode(e)
	if err != nil || all.Event == nil {
		return nil, false
	}
	return all.Event, true
}
