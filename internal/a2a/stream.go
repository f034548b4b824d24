package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// writeTimeout bounds one write of a stream: a client that reads nothing
// for that long is dropped (its task goes on).
const writeTimeout = 30 * time.Second

// stream is an open SSE response whose events are JSON-RPC responses to
// one request; a heartbeat comment keeps an idle one open.
type stream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	id   json.RawMessage
	mu   sync.Mutex
	last time.Time
	err  error
}

func (h *Handler) openStream(w http.ResponseWriter, id json.RawMessage) *stream {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w), id: id, last: time.Now()}
	_ = s.rc.Flush()
	return s
}

func (s *stream) raw(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	s.last = time.Now()
	s.err = s.rc.Flush()
	return s.err
}

// send writes one event: a result, or an error that ends the stream.
func (s *stream) send(result any, e *rpcError) error {
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: s.id, Result: result, Error: e})
	if err != nil {
		return err
	}
	return s.raw(append(append([]byte("data: "), b...), '\n', '\n'))
}

// beat writes a comment line whenever the stream was idle for every; it
// returns when ctx ends.
func (s *stream) beat(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			idle := time.Since(s.last) >= every
			s.mu.Unlock()
			if idle && s.raw([]byte(": keepalive\n\n")) != nil {
				return
			}
		}
	}
}

// serve streams task w: its snapshot first, then every later update,
// until the task settles (a streaming send: it ends or waits for input)
// or ends (a subscription), the client leaves or the server shuts down.
func (h *Handler) serve(rw http.ResponseWriter, r *http.Request, id json.RawMessage, w *watch, history int, until func(string) bool) {
	defer w.close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s := h.openStream(rw, id)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.beat(ctx, h.cfg.Heartbeat) }()
	go func() { // the shutdown watch
		defer wg.Done()
		select {
		case <-h.cfg.Done:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	t := w.v.task(history)
	if s.send(StreamResponse{Task: &t}, nil) != nil || until(w.v.state) {
		return
	}
	for {
		ups, err := w.next(ctx)
		if err != nil {
			if ctx.Err() == nil { // the subscription failed: say so, the client resubscribes
				_ = s.send(nil, rpcErr(codeInternal, "the server stopped following task %s (overloaded or shutting down): call SubscribeToTask to resume", w.v.id))
			}
			return
		}
		for _, u := range ups {
			if s.send(u, nil) != nil {
				return
			}
		}
		if until(w.v.state) {
			return
		}
	}
}

func (h *Handler) sendStreaming(rw http.ResponseWriter, r *http.Request, a Agent, req request) {
	var p sendParams
	if err := params(req, &p); err != nil {
		reply(rw, req.ID, nil, h.toRPC(req.Method, err))
		return
	}
	id, err := h.start(r.Context(), a, p)
	if err != nil {
		reply(rw, req.ID, nil, h.toRPC(req.Method, err))
		return
	}
	w, _, err := h.open(r.Context(), id)
	if err != nil {
		reply(rw, req.ID, nil, h.toRPC(req.Method, err))
		return
	}
	var hl *int
	if p.Configuration != nil {
		hl = p.Configuration.HistoryLength
	}
	h.serve(rw, r, req.ID, w, historyOf(hl), settled)
}

// subscribe streams a task as it stands, then every later update once,
// until it ends; a task that ended already gets its snapshot alone.
func (h *Handler) subscribe(rw http.ResponseWriter, r *http.Request, req request) {
	var p taskParams
	if err := params(req, &p); err != nil {
		reply(rw, req.ID, nil, h.toRPC(req.Method, err))
		return
	}
	w, _, err := h.open(r.Context(), p.ID)
	if err != nil {
		reply(rw, req.ID, nil, h.toRPC(req.Method, err))
		return
	}
	h.serve(rw, r, req.ID, w, historyOf(p.HistoryLength), terminal)
}
