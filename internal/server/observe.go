package server

import (
	"net/http"
	"strings"
	"time"
)

// Observer watches the HTTP surface for metrics. Route is the pattern that
// matched (r.Pattern, e.g. "GET /agentik/conversations/{id}"), or
// "unmatched": never the raw path, so label values stay bounded.
type Observer interface {
	// Request is called once a request is answered. Streams report here
	// too, when they end.
	Request(route string, status int, d time.Duration)
	// StreamOpened is called when a WebSocket is accepted (kind "ws") or an
	// SSE stream starts (kind "sse"); the returned func is called when it
	// ends.
	StreamOpened(kind string) (closed func())
}

// routeUnmatched labels requests no route pattern matched.
const routeUnmatched = "unmatched"

// observe reports every request to the Observer, with the route pattern
// mux would pick for it (found before the guard runs, so rejected requests
// are counted under their route).
func (s *Server) observe(mux *http.ServeMux, next http.Handler) http.Handler {
	o := s.cfg.Observer
	if o == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, route := mux.Handler(r)
		if route == "" {
			route = routeUnmatched
		}
		ow := &observedWriter{ResponseWriter: w, o: o, route: route, start: time.Now()}
		defer func() {
			if !ow.handed {
				ow.end()
			}
		}()
		next.ServeHTTP(ow, r)
	})
}

// end reports the request, and the end of its stream if it was one.
func (w *observedWriter) end() {
	if w.closed != nil {
		w.closed()
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	w.o.Request(w.route, status, time.Since(w.start))
}

// handOver: a WebSocket is reported when it ends (handover.go).
func (w *observedWriter) handOver() func() {
	w.handed = true
	w.ResponseWriter = nil
	return w.end
}

// observedWriter records the status and notices streams: a 101 is an
// accepted WebSocket, a 200 with text/event-stream an SSE stream. Unwrap
// lets http.ResponseController and the WebSocket library reach the
// Flusher and Hijacker underneath.
type observedWriter struct {
	http.ResponseWriter
	o      Observer
	route  string
	start  time.Time
	status int
	closed func()
	handed bool // the handler took end (handOver)
}

func (w *observedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		switch {
		case code == http.StatusSwitchingProtocols:
			w.closed = w.o.StreamOpened("ws")
		case code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream"):
			w.closed = w.o.StreamOpened("sse")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *observedWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// handleMetrics serves the Prometheus exposition, when metrics are on.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		http.NotFound(w, r)
		return
	}
	if !s.admin(w, r) {
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}
