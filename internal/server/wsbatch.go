package server

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// wsBatchBytes bounds what a WebSocket connection holds back to send in
// one write.
const wsBatchBytes = 64 << 10

// batchConn is a WebSocket's connection that can hold frames back and send
// them in one write. coder/websocket flushes every message; when the
// connection's writer knows more frames are queued behind this one (a
// replay, a burst of fan-out), it holds, and the frame waits for the next
// write that does not hold: a replay of a thousand events costs a few
// syscalls instead of a thousand. Frames keep their order, and nothing is
// held once the queue is empty.
//
// With a timeout, every write to the network is bounded by it (a write
// deadline set just before it): the connection's writer then needs no
// deadline of its own per frame, most of which never reach the network.
type batchConn struct {
	net.Conn
	timeout time.Duration // set before the first write
	// onStall, when set (before the first write), is called from a timer
	// when one write to the network has been blocked for stallAfter: the
	// client reads too slowly, and the connection's writer cannot tell,
	// being blocked in that write.
	onStall    func()
	stallAfter time.Duration

	mu   sync.Mutex // held by a write, also while it blocks
	hold bool
	buf  []byte

	deadlineMu sync.Mutex // orders send's deadline and expire's
	expired    bool
	deadline   time.Time // the write deadline set last; deadlineMu

	// The stall watch: one timer per connection, armed by a write when it
	// is not, which on firing looks at the write under way (writing, the
	// monotonic instant it began, 0 when none is) and either reports the
	// stall, waits for the rest of stallAfter, or disarms. A write costs
	// an atomic store instead of a timer's Reset and Stop.
	writing  atomic.Int64
	stallMu  sync.Mutex
	stall    *time.Timer // made at the first write; stallMu
	stallSet bool        // stall is armed; stallMu
}

// deadlineSlack is how much later than the timeout a write's deadline may
// fall: send moves the deadline only once it is nearer than the timeout,
// to timeout+timeout/deadlineSlack ahead, so a connection streaming a
// frame every few milliseconds sets it a few times a timeout, not once a
// frame (each set is a runtime timer's update). Every write still has at
// least the timeout, and at most an eighth more.
const deadlineSlack = 8

// monoBase anchors mono's monotonic instants.
var monoBase = time.Now()

// mono is a monotonic instant in nanoseconds, never 0.
func mono(t time.Time) int64 { return int64(t.Sub(monoBase)) + 1 }

// send writes p to the network under the timeout; b.mu is held.
func (b *batchConn) send(p []byte) (int, error) {
	now := time.Now()
	if b.timeout > 0 {
		b.deadlineMu.Lock()
		var err error
		switch {
		case b.expired:
			err = net.ErrClosed
		case b.deadline.Sub(now) < b.timeout:
			b.deadline = now.Add(b.timeout + b.timeout/deadlineSlack)
			err = b.Conn.SetWriteDeadline(b.deadline)
		}
		b.deadlineMu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	if b.onStall == nil {
		return b.Conn.Write(p)
	}
	b.writing.Store(mono(now))
	b.stallMu.Lock()
	if !b.stallSet {
		b.stallSet = true
		if b.stall == nil {
			b.stall = time.AfterFunc(b.stallAfter, b.checkStall)
		} else {
			b.stall.Reset(b.stallAfter)
		}
	}
	b.stallMu.Unlock()
	n, err := b.Conn.Write(p)
	b.writing.Store(0)
	return n, err
}

// checkStall is the stall timer's: it reports a write blocked for
// stallAfter, waits for the rest of it when the write under way began
// later, and disarms when none is under way (the next write arms it).
func (b *batchConn) checkStall() {
	b.stallMu.Lock()
	since := b.writing.Load()
	if since != 0 {
		if wait := b.stallAfter - time.Duration(mono(time.Now())-since); wait > 0 {
			b.stall.Reset(wait)
			b.stallMu.Unlock()
			return
		}
	}
	b.stallSet = false
	b.stallMu.Unlock()
	if since != 0 {
		b.onStall()
	}
}

// flush sends what is held and holds nothing more until holdNext(true).
func (b *batchConn) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = false
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.send(b.buf)
	b.reset()
	return err
}

// reset empties the buffer after a send: it goes back to packBufs (one
// that outgrew it is let go), so a connection holds no buffer between its
// writes, and the next hold takes one of full size from the pool instead
// of growing its own by doubling (in a reconnect storm every connection
// did, once).
func (b *batchConn) reset() {
	putPackBuf(b.buf)
	b.buf = nil
}

// expire makes a write that is blocked, and every later one, fail now.
func (b *batchConn) expire() {
	b.deadlineMu.Lock()
	defer b.deadlineMu.Unlock()
	b.expired = true
	_ = b.Conn.SetWriteDeadline(time.Unix(1, 0))
}

// holdNext says whether writes that follow may wait for a later one.
func (b *batchConn) holdNext(hold bool) {
	b.mu.Lock()
	b.hold = hold
	b.mu.Unlock()
}

// Write sends p, with what was held before it, or holds it.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold && len(b.buf)+len(p) <= wsBatchBytes {
		if b.buf == nil {
			b.buf = getPackBuf()
		}
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	if len(b.buf) == 0 {
		return b.send(p)
	}
	b.buf = append(b.buf, p...)
	_, err := b.send(b.buf)
	b.reset()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// batchWriter is the ResponseWriter handed to websocket.Accept: its
// Hijack gives the connection as a batchConn.
type batchWriter struct {
	http.ResponseWriter
	conn *batchConn // set by Hijack
}

func (w *batchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack implements http.Hijacker.
func (w *batchWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	w.conn = &batchConn{Conn: c}
	// net/http hands over its connection's own 4 KiB writer (flushed
	// above): it now writes to the batchConn, so an idle WebSocket holds
	// one write buffer, not two.
	brw.Writer.Reset(w.conn)
	return w.conn, brw, nil
}
