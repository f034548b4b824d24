package server

import "net/http"

// A hijacked WebSocket is served on a goroutine of its own once the
// upgrade is done, and its handler returns: net/http's goroutine then
// ends, and with it the deep stack it grew to run the middleware and the
// upgrade, the response and its 2 KiB buffer, and the request (the idle
// connection memory budget, docs/BENCHMARKS.md). A middleware whose
// ResponseWriter is a handOverer has work to do when its request ends
// (report it, release the key's hold): the handler takes that work with
// handOver and does it when the connection ends.
type handOverer interface {
	// handOver returns the middleware's end-of-request work, which it
	// then leaves undone when the handler returns. The ResponseWriter is
	// not used again.
	handOver() (end func())
}

// handOver takes the end-of-request work of every middleware between w
// and net/http, innermost first: the order their defers would run.
func handOver(w http.ResponseWriter) []func() {
	var ends []func()
	for w != nil {
		var next http.ResponseWriter
		if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
			next = u.Unwrap()
		}
		if h, ok := w.(handOverer); ok {
			ends = append(ends, h.handOver())
		}
		w = next
	}
	return ends
}

// heldWriter is the guard's ResponseWriter of a WebSocket upgrade: the
// key's hold (people.hold) is released when the connection ends, not when
// the handler returns, so a revoked key still closes it.
type heldWriter struct {
	http.ResponseWriter
	release func()
	handed  bool
}

func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *heldWriter) handOver() func() {
	w.handed = true
	w.ResponseWriter = nil
	return w.release
}

// done is the guard's deferred release.
func (w *heldWriter) done() {
	if !w.handed {
		w.release()
	}
}
