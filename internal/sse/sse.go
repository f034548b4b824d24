// Package sse writes server-sent event streams: the headers that keep
// proxies from buffering, frames (id:, event:, data:), comment
// heartbeats, a write deadline on every write, and a flush after each.
// Every SSE surface of agentik (its own event streams, the OpenAI facade,
// and the other protocol packages) writes through it, and Group ends and
// waits for long-lived streams on shutdown.
//
// It imports the standard library only, so any adapter may use it.
package sse

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// WriteTimeout bounds every write to an SSE client: a client that stops
// reading is cut off instead of holding a goroutine forever.
const WriteTimeout = 10 * time.Second

// ContentType is the media type of an event stream.
const ContentType = "text/event-stream"

// Headers sets the headers of an event stream that proxies must not
// buffer or cache.
func Headers(h http.Header) {
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// Writer writes one event stream. Frames are queued by Event, Seq, Data
// and Comment and go out, in one write and one flush, at Flush; so a
// burst costs one write. Its methods are safe for concurrent use. After a
// write fails every later Flush fails with the same error. Heartbeats are
// relay.Follow's, which writes a Comment when a stream is idle.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu       sync.Mutex
	buf      []byte
	deadline time.Time // the write deadline set last
	err      error     // the first write error
}

// deadlineSlack is how much later than the timeout a write's deadline may
// fall: Flush moves the deadline only once it is nearer than the timeout,
// to timeout+timeout/deadlineSlack ahead, so a stream flushing every few
// milliseconds sets it a few times a timeout, not once a flush (each set
// is a runtime timer's update). Every write still has at least the
// timeout, and at most an eighth more.
const deadlineSlack = 8

// Start answers 200 with an event stream's headers, flushes them, and
// returns its Writer. Headers set on w before are kept (Start only adds
// the stream's own).
func Start(w http.ResponseWriter) *Writer {
	Headers(w.Header())
	w.WriteHeader(http.StatusOK)
	sw := &Writer{w: w, rc: http.NewResponseController(w), timeout: WriteTimeout}
	_ = sw.rc.Flush()
	return sw
}

// Event queues a frame; an empty id or event leaves that field out. Data
// holding newlines is sent as several data: lines, which a client joins
// back with newlines.
func (w *Writer) Event(id, event string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id != "" {
		w.buf = append(append(append(w.buf, "id: "...), id...), '\n')
	}
	w.frame(event, data)
}

// Seq queues a frame whose id is a seq (0 leaves the id out), without
// formatting it as a string first.
func (w *Writer) Seq(seq int64, event string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if seq != 0 {
		w.buf = append(w.buf, "id: "...)
		w.buf = strconv.AppendInt(w.buf, seq, 10)
		w.buf = append(w.buf, '\n')
	}
	w.frame(event, data)
}

// Data queues a frame of data only (OpenAI's chunks, "[DONE]").
func (w *Writer) Data(data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frame("", data)
}

func (w *Writer) frame(event string, data []byte) {
	if event != "" {
		w.buf = append(append(append(w.buf, "event: "...), event...), '\n')
	}
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		w.buf = append(append(append(w.buf, "data: "...), line...), '\n')
		if !more {
			break
		}
		data = rest
	}
	w.buf = append(w.buf, '\n')
}

// Comment queues a comment line (": text"), which clients skip: a
// heartbeat that keeps proxies from closing an idle stream.
func (w *Writer) Comment(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(append(append(w.buf, ": "...), text...), "\n\n"...)
}

// Buffered is how many bytes are queued.
func (w *Writer) Buffered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf)
}

// Flush writes what is queued under the write deadline (at least the
// timeout ahead, see deadlineSlack) and flushes it to the client. With
// nothing queued it does nothing.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	now := time.Now()
	if w.deadline.Sub(now) < w.timeout {
		w.deadline = now.Add(w.timeout + w.timeout/deadlineSlack)
		_ = w.rc.SetWriteDeadline(w.deadline)
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	if err == nil {
		err = w.rc.Flush()
	}
	if err != nil {
		w.err = err
	}
	return err
}

// ErrShuttingDown is Group.Hold's refusal once shutdown began.
var ErrShuttingDown = errors.New("shutting down")

// Group is the set of long-lived streams (SSE, WebSocket) a server ends
// and waits for on shutdown. A stream Holds a place before it starts and
// Releases it when it ends, and returns once Closing is closed.
type Group struct {
	mu      sync.Mutex // orders Hold's Add before Shutdown's Wait
	closed  bool
	wg      sync.WaitGroup
	closing chan struct{}
	ctx     context.Context // done when closing is
	cancel  context.CancelFunc
}

// NewGroup makes an empty Group.
func NewGroup() *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{closing: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// Context is done when Shutdown begins, as Closing is closed: a stream
// with no goroutine waiting for Closing learns of it through
// context.AfterFunc.
func (g *Group) Context() context.Context { return g.ctx }

// Hold counts a stream that Shutdown waits for; false once Shutdown began
// (the stream must not start). The caller calls Release when it ends.
func (g *Group) Hold() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Release ends a stream that Hold counted.
func (g *Group) Release() { g.wg.Done() }

// Closing is closed when Shutdown begins: every stream ends.
func (g *Group) Closing() <-chan struct{} { return g.closing }

// Shutdown closes Closing and waits for every held stream, or for ctx.
func (g *Group) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.closing)
		g.cancel()
	}
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
