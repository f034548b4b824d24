package server

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"
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
