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
