package server_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/testwait"
)

// TestWSSubscriptionsAddNoGoroutines: a connection's writer serves its
// subscriptions itself, so an idle connection costs the same goroutines
// with one subscription or several (the idle memory budget), and every
// subscription still gets its frames.
func TestWSSubscriptionsAddNoGoroutines(t *testing.T) {
	if !alone(t) {
		return
	}
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("", false)
	first := w.subscribe(map[string]any{"stream": "all"})
	base := runtime.NumGoroutine()
	subs := []string{first.Sub}
	for _, f := range []map[string]any{
		{"stream": "conversation", "conversation_id": c.ID},
		{"stream": "conversation", "conversation_id": c.ID, "after": 0},
		{"stream": "agent"},
	} {
		subs = append(subs, w.subscribe(f).Sub)
	}
	// The commands ran on a drain goroutine that ends with its queue.
	testwait.For(t, "no goroutine per subscription", func() bool { return runtime.NumGoroutine() <= base })

	w.send(c.ID, "hello")
	ended := map[string]bool{}
	for len(ended) < 3 { // the agent stream sees no end event
		f := w.next()
		if f.Type == protocol.FrameEvent && turnEnds(c.ID)(decodeEvent(t, f.Event)) {
			ended[f.Sub] = true
		}
	}
	for _, s := range subs[:3] {
		if !ended[s] {
			t.Fatalf("subscription %s saw no end of the turn; got %v", s, ended)
		}
	}
}

// wsGoroutines counts the goroutines whose stack is in fn (a function of
// the server package, "(*wsConn).writer").
func wsGoroutines(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "server."+fn+"(")
}

// TestWSIdleConnectionHasOneGoroutine: a connection's writer runs only
// while there is something to write, so an idle subscribed connection
// holds one goroutine, its reader (the idle memory budget); the next
// event starts a writer again, and the connection goes on.
func TestWSIdleConnectionHasOneGoroutine(t *testing.T) {
	if !alone(t) {
		return
	}
	ts := newTestServer(t)
	w := dialWS(t, ts)
	defer w.close()
	c := w.create("", false)
	w.subscribe(map[string]any{"stream": "conversation", "conversation_id": c.ID})
	idle := func() bool { return wsGoroutines("(*wsConn).writer") == 0 && wsGoroutines("(*wsConn).serveConn") == 1 }
	testwait.For(t, "the reader alone", idle)
	for range 2 {
		w.send(c.ID, "hello")
		for {
			f := w.next()
			if f.Type == protocol.FrameEvent && turnEnds(c.ID)(decodeEvent(t, f.Event)) {
				break
			}
		}
		testwait.For(t, "the reader alone after a turn", idle)
	}
}
