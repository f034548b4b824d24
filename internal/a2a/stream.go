package a2a

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentik/agentik/internal/sse"
)

// stream is an open SSE response whose events are JSON-RPC responses to
// one request.
type stream struct {
	w  *sse.Writer
	id json.RawMessage
}

// send writes one event: a result, or an error that ends the stream.
func (s *stream) send(result any, e *rpcError) error {
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: s.id, Result: result, Error: e})
	if err != nil {
		return err
	}
	s.w.Data(b)
	return s.w.Flush()
}

// serve streams task w: its snapshot first, then every later update,
// until the task settles (a streaming send: it ends or waits for input)
// or ends (a subscription), the client leaves or the server shuts down.
func (h *Handler) serve(rw http.ResponseWriter, r *http.Request, id json.RawMessage, w *watch, history int, until func(string) bool) {
	defer w.close()
	if !h.cfg.Streams.Hold() {
		reply(rw, id, nil, rpcErr(codeInternal, "the server is shutting down; subscribe to task %s again once it is back", w.v.id))
		return
	}
	defer h.cfg.Streams.Release()
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	ctx, cancel := context.WithCancel(r.Context())
	watched := make(chan struct{})
	go func() { // the shutdown watch
		defer close(watched)
		select {
		case <-h.cfg.Streams.Closing():
			cancel()
		case <-ctx.Done():
		}
	}()
	defer func() { cancel(); <-watched }()
	s := &stream{w: sse.Start(rw), id: id}
	defer s.w.KeepAlive(h.cfg.Heartbeat, "keepalive")()
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
	id, err := h.startPushed(r.Context(), a, p)
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
