package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/testwait"
)

// countConn records each write to the network.
type countConn struct {
	net.Conn
	writes [][]byte
}

func (c *countConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func TestBatchConnHoldsFramesForOneWrite(t *testing.T) {
	t.Parallel()
	under := &countConn{}
	b := &batchConn{Conn: under}
	b.holdNext(true)
	for _, f := range []string{"one", "two", "three"} {
		if n, err := b.Write([]byte(f)); n != len(f) || err != nil {
			t.Fatalf("write %q: %d, %v", f, n, err)
		}
	}
	if len(under.writes) != 0 {
		t.Fatalf("held frames were written: %q", under.writes)
	}
	b.holdNext(false)
	b.Write([]byte("four"))
	b.Write([]byte("five"))
	if len(under.writes) != 2 || string(under.writes[0]) != "onetwothreefour" || string(under.writes[1]) != "five" {
		t.Fatalf("writes %q, want the held frames with the first unheld one, then the next alone", under.writes)
	}
	// Holding never grows past wsBatchBytes: a frame that would is sent
	// with what was held.
	b.holdNext(true)
	b.Write(make([]byte, wsBatchBytes-10))
	b.Write(make([]byte, 20))
	if len(under.writes) != 3 || len(under.writes[2]) != wsBatchBytes+10 {
		t.Fatalf("%d writes, the last %d bytes", len(under.writes), len(under.writes[len(under.writes)-1]))
	}
}

// TestBatchConnBoundsEveryWrite: with a timeout, a write the peer does
// not read fails instead of blocking, and expire fails a blocked write,
// and every later one, at once (the connection's writer sets no deadline
// of its own per frame).
func TestBatchConnBoundsEveryWrite(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe() // a write blocks until the other end reads it
	defer a.Close()
	defer b.Close()
	bc := &batchConn{Conn: a, timeout: time.Millisecond}
	if _, err := bc.Write([]byte("never read")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write nobody reads: %v, want a deadline error", err)
	}

	bc = &batchConn{Conn: a, timeout: time.Hour}
	done := make(chan error, 1)
	go func() {
		_, err := bc.Write([]byte("blocked"))
		done <- err
	}()
	bc.expire()
	if err := <-done; err == nil {
		t.Fatal("a write blocked when the connection ended succeeded")
	}
	if _, err := bc.Write([]byte("later")); err == nil {
		t.Fatal("a write after expire succeeded")
	}
}

// deadlineConn counts the write deadlines set on it and keeps the last.
type deadlineConn struct {
	countConn
	sets     int
	deadline time.Time
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.sets++
	c.deadline = t
	return nil
}

// TestBatchConnMovesTheDeadlineOncePerSlack: a stream of writes sets the
// write deadline once, not once a write, and every write still has at
// least the timeout ahead of it.
func TestBatchConnMovesTheDeadlineOncePerSlack(t *testing.T) {
	t.Parallel()
	under := &deadlineConn{}
	const timeout = time.Hour
	b := &batchConn{Conn: under, timeout: timeout}
	for i := range 100 {
		if _, err := b.Write([]byte("frame")); err != nil {
			t.Fatal(err)
		}
		// Measured after the write: the deadline was at least this far
		// ahead when it began.
		if left := time.Until(under.deadline); left < timeout || left > timeout+timeout/deadlineSlack {
			t.Fatalf("write %d: deadline %s ahead, want [%s, %s]", i, left, timeout, timeout+timeout/deadlineSlack)
		}
	}
	if under.sets != 1 || len(under.writes) != 100 {
		t.Fatalf("%d deadlines set for %d writes, want 1", under.sets, len(under.writes))
	}
	// Once the deadline is nearer than the timeout, the next write moves it.
	b.deadline = time.Now().Add(timeout - time.Minute)
	b.Write([]byte("frame"))
	if under.sets != 2 || under.deadline.Sub(time.Now()) < timeout {
		t.Fatalf("%d deadlines set, the last %s ahead", under.sets, time.Until(under.deadline))
	}
}

// TestBatchConnReportsABlockedWrite: a write the peer does not read is
// reported once stallAfter has passed; writes that go through are not,
// and the watch disarms once no write is under way.
func TestBatchConnReportsABlockedWrite(t *testing.T) {
	t.Parallel()
	a, peer := net.Pipe()
	defer a.Close()
	defer peer.Close()
	var stalls atomic.Int32
	// While the peer reads, stallAfter is production's: on a loaded
	// machine a write the reader is merely slow to take may block for
	// 20 ms, and reporting it would be right.
	b := &batchConn{Conn: a, stallAfter: wsStallTimeout, onStall: func() { stalls.Add(1) }}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 64)
		for range 50 {
			if _, err := io.ReadFull(peer, buf[:5]); err != nil {
				return
			}
		}
	}()
	for range 50 {
		if _, err := b.Write([]byte("frame")); err != nil {
			t.Fatal(err)
		}
	}
	<-read
	testwait.For(t, "the stall watch to disarm", func() bool {
		b.stallMu.Lock()
		defer b.stallMu.Unlock()
		return !b.stallSet
	})
	if n := stalls.Load(); n != 0 {
		t.Fatalf("%d stalls reported for writes that went through", n)
	}
	// Nobody reads now: the write blocks and is reported, once.
	b.stallMu.Lock()
	b.stallAfter = 20 * time.Millisecond
	b.stallMu.Unlock()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := b.Write([]byte("blocked"))
		done <- err
	}()
	testwait.For(t, "the blocked write to be reported", func() bool { return stalls.Load() == 1 })
	if waited := time.Since(start); waited < b.stallAfter {
		t.Fatalf("reported after %s, before stallAfter (%s)", waited, b.stallAfter)
	}
	a.Close()
	<-done
	testwait.For(t, "the stall watch to disarm", func() bool {
		b.stallMu.Lock()
		defer b.stallMu.Unlock()
		return !b.stallSet
	})
	if n := stalls.Load(); n != 1 {
		t.Fatalf("%d stalls reported for one blocked write", n)
	}
}

// TestBatchConnHoldsNoBufferBetweenWrites: what a hold gathers goes into a
// pooled buffer of full size (no growing by doubling, which every
// connection of a reconnect storm did), which goes back to the pool once
// sent: between writes a connection holds none.
func TestBatchConnHoldsNoBufferBetweenWrites(t *testing.T) {
	t.Parallel()
	under := &countConn{}
	b := &batchConn{Conn: under}
	b.holdNext(true)
	b.Write([]byte("reply"))
	if cap(b.buf) != packBufCap {
		t.Fatalf("held into a buffer of %d bytes, want a pooled one of %d", cap(b.buf), packBufCap)
	}
	for range 100 {
		b.Write(make([]byte, 200))
	}
	if cap(b.buf) != packBufCap {
		t.Fatalf("the held buffer grew to %d bytes", cap(b.buf))
	}
	if err := b.flush(); err != nil {
		t.Fatal(err)
	}
	if b.buf != nil {
		t.Fatalf("after the send the connection still holds %d bytes of buffer", cap(b.buf))
	}
	if len(under.writes) != 1 || len(under.writes[0]) != 5+100*200 {
		t.Fatalf("%d writes, want one of the held frames", len(under.writes))
	}
}
