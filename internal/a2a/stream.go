package a2a

import (
	"encoding/json"
	"net/http"

	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// binding is how one request is answered: over JSON-RPC (its id, and
// whether it used A2A 0.3's method names and shapes) or over the
// HTTP+JSON (REST) binding.
type binding struct {
	rest bool
	v03  bool
	id   json.RawMessage // of the JSON-RPC request
}

// refuse answers a request that fails before anything streams.
func (h *Handler) refuse(rw http.ResponseWriter, b binding, method string, err error) {
	if b.rest {
		h.restError(rw, method, err)
		return
	}
	reply(rw, b.id, nil, h.toRPC(method, err))
}

// result answers a request with its result.
func (h *Handler) result(rw http.ResponseWriter, b binding, status int, v any) {
	if b.rest {
		writeJSON(rw, status, v)
		return
	}
	reply(rw, b.id, v, nil)
}

// stream is an open SSE response: its events are a request's stream
// responses in the request's binding.
type stream struct {
	h *Handler
	w *sse.Writer
	b binding
}

// frame is one event's frame.
func (s *stream) frame(ev StreamResponse) relay.Frame {
	var v any = ev
	if s.b.v03 {
		v = v03Event(ev)
	}
	if !s.b.rest {
		v = response{JSONRPC: "2.0", ID: s.b.id, Result: v}
	}
	b, _ := json.Marshal(v) // a stream response always marshals
	return relay.Data(b)
}

// send writes one event.
func (s *stream) send(ev StreamResponse) error {
	s.w.Data(s.frame(ev).Data)
	return s.w.Flush()
}

// failFrame is the frame of the error that ends the stream: a JSON-RPC
// error response, or REST's error event (event: error, data: {"error": {…}}).
func (s *stream) failFrame(e *rpcError) relay.Frame {
	if s.b.rest {
		_, body := restBody(e)
		b, _ := json.Marshal(body)
		return relay.Frame{Event: "error", Data: b}
	}
	b, _ := json.Marshal(response{JSONRPC: "2.0", ID: s.b.id, Error: e})
	return relay.Data(b)
}

// serve streams task w: its snapshot first, then every later update,
// until the task settles (a streaming send: it ends or waits for input)
// or ends (a subscription), the client leaves or the server shuts down.
func (h *Handler) serve(rw http.ResponseWriter, r *http.Request, b binding, w *watch, history int, until func(string) bool) {
	defer w.close()
	if !h.cfg.Streams.Hold() {
		h.refuse(rw, b, "", rpcErr(codeInternal, "the server is shutting down; subscribe to task %s again once it is back", w.v.id))
		return
	}
	defer h.cfg.Streams.Release()
	if len(b.id) == 0 {
		b.id = json.RawMessage("null")
	}
	s := &stream{h: h, w: sse.Start(rw), b: b}
	t := w.v.task(history)
	if s.send(StreamResponse{Task: &t}) != nil || until(w.v.state) {
		return
	}
	// It ends when the task settles, the client leaves or the server shuts down.
	_ = w.follow(r.Context(), relay.Follow{Sink: relay.SSE(s.w), Heartbeat: h.cfg.Heartbeat, Closing: h.cfg.Streams.Closing(),
		Cut: func(error) []relay.Frame {
			// The subscription failed: say so, the client resubscribes.
			return []relay.Frame{s.failFrame(rpcErr(codeInternal, "the server stopped following task %s (overloaded or shutting down): subscribe to it again to resume", w.v.id))}
		}}, until, s.frame)
}

// sendStreaming sends the message and streams its task until it settles.
func (h *Handler) sendStreaming(rw http.ResponseWriter, r *http.Request, b binding, method string, a Agent, p sendParams) {
	id, err := h.startPushed(r.Context(), a, p)
	if err != nil {
		h.refuse(rw, b, method, err)
		return
	}
	w, _, err := h.openStart(r.Context(), id)
	if err != nil {
		h.refuse(rw, b, method, err)
		return
	}
	h.serve(rw, r, b, w, historyOf(p.history()), settled)
}

// subscribe streams a task as it stands, then every later update once,
// until it ends; a task that ended already gets its snapshot alone.
func (h *Handler) subscribe(rw http.ResponseWriter, r *http.Request, b binding, method string, p taskParams) {
	w, _, err := h.open(r.Context(), p.ID)
	if err != nil {
		h.refuse(rw, b, method, err)
		return
	}
	h.serve(rw, r, b, w, historyOf(p.HistoryLength), terminal)
}
