package main

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// frame is a server frame as the bench reads it: only what it checks.
type frame struct {
	Type   string          `json:"type"`
	ID     *string         `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *agent.Error    `json:"error"`
	Sub    string          `json:"sub"`
	Seq    int64           `json:"seq"`
	After  int64           `json:"after"`
	Reason string          `json:"reason"`
	Event  *wireEvent      `json:"event"`
}

// wireEvent is an AllEvent as the bench reads it.
type wireEvent struct {
	Kind           string    `json:"type"`
	Seq            int64     `json:"seq"`
	ConversationID string    `json:"conversation_id"`
	Event          wireInner `json:"event"`
}

// wireInner is a conversation Event as the bench reads it (also the data
// of a conversation SSE frame).
type wireInner struct {
	Type    string         `json:"type"`
	Text    string         `json:"text"`
	Message *agent.Message `json:"message"`
	CallID  string         `json:"call_id"` // of an approval_request
}

// wsClient is one WebSocket connection speaking the agentik protocol (or
// the bare baseline's subset). A reader goroutine, owned by the client and
// ended by Close, reads every frame: replies go to the waiting call, the
// rest to on.
type wsClient struct {
	c     *websocket.Conn
	on    func(f *frame, at time.Time) // runs on the reader goroutine
	bytes atomic.Int64                 // frame payloads plus headers, server to client
	// deflated, when set, also compresses every frame as permessage-deflate
	// with context takeover would: what compression would save.
	deflated *deflateCounter
	// skim is how much of an event frame it reads (see skim); set
	// before the first frame arrives.
	skim skim

	mu      sync.Mutex
	pending map[string]chan *frame
	next    int
	done    chan struct{}
	err     error // why the reader stopped; read after done
}

// dialWS connects to url and starts the reader.
func dialWS(ctx context.Context, url string, on func(*frame, time.Time)) (*wsClient, error) {
	return dialWSWith(ctx, url, on, skimNone, "")
}

// dialWSWith is dialWS, with how much of a frame to read (skim) and, when key is set,
// that bearer key.
func dialWSWith(ctx context.Context, url string, on func(*frame, time.Time), sk skim, key string) (*wsClient, error) {
	var opts *websocket.DialOptions
	if key != "" {
		opts = &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}}
	}
	c, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	c.SetReadLimit(64 << 20)
	k := &wsClient{c: c, on: on, skim: sk, pending: map[string]chan *frame{}, done: make(chan struct{})}
	go k.read()
	return k, nil
}

// wsHeader is the size of a server frame's header (unmasked).
func wsHeader(n int) int64 {
	switch {
	case n < 126:
		return 2
	case n < 1<<16:
		return 4
	}
	return 10
}

// readBufs are the buffers clients read messages into, one per message
// while it is decoded: a client's own buffer grew by doubling to hold its
// first packed message (a resume's replay), which in a reconnect storm was
// a thousand clients' growing at once, CPU the server shares the cores
// with.
var readBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (k *wsClient) read() {
	defer close(k.done)
	for {
		_, r, err := k.c.Reader(context.Background())
		if err != nil {
			k.ended(err)
			return
		}
		buf := readBufs.Get().(*bytes.Buffer)
		buf.Reset()
		_, err = buf.ReadFrom(r)
		at := time.Now()
		if err != nil {
			readBufs.Put(buf)
			k.ended(err)
			return
		}
		m := buf.Bytes()
		k.bytes.Add(int64(len(m)) + wsHeader(len(m)))
		if k.deflated != nil {
			k.deflated.add(m)
		}
		// A packed message (?pack=1) holds several frames, one per line;
		// JSON frames hold no raw newline, so any other is one frame.
		// Every frame is decoded before the buffer goes back.
		for b := range bytes.SplitSeq(m, []byte{'\n'}) {
			k.frame(b, at)
		}
		readBufs.Put(buf)
	}
}

// ended fails the calls waiting for replies once the connection has ended
// with err.
func (k *wsClient) ended(err error) {
	k.err = err
	k.mu.Lock()
	for id, ch := range k.pending {
		close(ch)
		delete(k.pending, id)
	}
	k.mu.Unlock()
}

// frame handles one frame: a reply goes to its call, the rest to on.
func (k *wsClient) frame(b []byte, at time.Time) {
	fe := new(struct {
		f  frame
		ev wireEvent
	})
	f := &fe.f
	if err := decodeFrame(b, f, &fe.ev, k.skim); err != nil {
		k.err = fmt.Errorf("decode frame %.200s: %w", b, err)
		_ = k.c.CloseNow()
		return
	}
	if f.Type == protocol.FrameReply && f.ID != nil {
		k.mu.Lock()
		ch := k.pending[*f.ID]
		delete(k.pending, *f.ID)
		k.mu.Unlock()
		if ch != nil {
			ch <- f
			return
		}
	}
	if k.on != nil {
		k.on(f, at)
	}
}

// call sends a command and waits for its reply; a failed reply is an
// error. result, if not nil, receives the reply's result.
func (k *wsClient) call(ctx context.Context, cmd protocol.Command, result any) error {
	ch := make(chan *frame, 1)
	k.mu.Lock()
	k.next++
	cmd.ID = strconv.Itoa(k.next)
	k.pending[cmd.ID] = ch
	k.mu.Unlock()
	b, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd.Op, err)
	}
	if err := k.c.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("%s: %w", cmd.Op, err)
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: connection ended: %v", cmd.Op, k.err)
		}
		if !f.OK {
			return fmt.Errorf("%s: %v", cmd.Op, f.Error)
		}
		if result != nil {
			return json.Unmarshal(f.Result, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", cmd.Op, ctx.Err())
	}
}

// subscribe subscribes to a stream (after < 0: live only) and returns the
// subscription id.
func (k *wsClient) subscribe(ctx context.Context, stream, convID string, after int64) (string, error) {
	cmd := protocol.Command{Op: protocol.OpSubscribe, Stream: stream, ConversationID: convID}
	if after >= 0 {
		cmd.After = &after
	}
	var res protocol.SubscribeResult
	if err := k.call(ctx, cmd, &res); err != nil {
		return "", err
	}
	return res.Sub, nil
}

// Close closes the connection and waits for the reader.
func (k *wsClient) Close() {
	_ = k.c.CloseNow()
	<-k.done
}

// sseClient reads one SSE stream. Its reader goroutine, owned by the client
// and ended by Close, hands each frame's event name and data to on.
type sseClient struct {
	resp   *http.Response
	cancel context.CancelFunc
	bytes  atomic.Int64
	done   chan struct{}
	err    error
}

// dialSSE opens an SSE stream (GET url) and starts the reader once the
// response headers arrived (the server has subscribed by then).
func dialSSE(ctx context.Context, hc *http.Client, url string, on func(event string, data []byte, at time.Time)) (*sseClient, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("sse %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("sse %s: status %s", url, resp.Status)
	}
	s := &sseClient{resp: resp, cancel: cancel, done: make(chan struct{})}
	go s.read(on)
	return s, nil
}

func (s *sseClient) read(on func(string, []byte, time.Time)) {
	defer close(s.done)
	br := bufio.NewReaderSize(s.resp.Body, 64<<10)
	var event string
	var data []byte
	for {
		line, err := br.ReadSlice('\n')
		at := time.Now()
		s.bytes.Add(int64(len(line)))
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.err = err
			}
			return
		}
		l := strings.TrimRight(string(line), "\r\n")
		switch {
		case l == "":
			if data != nil {
				on(event, data, at)
			}
			event, data = "", nil
		case strings.HasPrefix(l, "event: "):
			event = l[len("event: "):]
		case strings.HasPrefix(l, "data: "):
			data = []byte(l[len("data: "):])
		}
	}
}

// Close ends the stream and waits for the reader.
func (s *sseClient) Close() {
	s.cancel()
	s.resp.Body.Close()
	<-s.done
}

// wsURL turns an http:// root into the ws:// URL of path.
func wsURL(root, path string) string { return "ws" + strings.TrimPrefix(root, "http") + path }

// deflateCounter counts the bytes frames would take with permessage-deflate
// and context takeover (RFC 7692): one flate stream for the connection,
// flushed after every message, the 4-byte sync tail left out.
type deflateCounter struct {
	n int64 // compressed payloads plus headers
	w *flate.Writer
	c countWriter
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func newDeflateCounter() *deflateCounter {
	d := &deflateCounter{}
	d.w, _ = flate.NewWriter(&d.c, flate.BestSpeed)
	return d
}

func (d *deflateCounter) add(b []byte) {
	before := d.c.n
	_, _ = d.w.Write(b)
	_ = d.w.Flush()
	size := d.c.n - before - 4
	d.n += size + wsHeader(int(size))
}
