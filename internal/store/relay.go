package store

// EXPERIMENTAL: the event relay, a measured sketch of a distributed broker
// behind the broker seam (docs/BENCHMARKS.md, "Wave 3, session 4"). It is
// off unless Options.Relay names a relay (AGENTIK_EXPERIMENTAL_RELAY, set
// only by the bench); nothing else in the product uses it.
//
// With it, each instance sends the events its writer committed, their
// stored bytes, to the relay, which forwards them to every other
// instance; those publish them from memory (catchUp with own), reading
// from the log only the gap below them, if any. PostgreSQL stays the log:
// NOTIFY still runs, and a notified seq the relay has not brought within
// relayGrace is read from the log, so a lost frame, a full queue or a
// relay that is down delays events by relayGrace, never loses them.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// relayGrace is how long a notified seq may wait for the relay before the
// listener reads it from the log.
var relayGrace = 250 * time.Millisecond

// relayQueue bounds the batches waiting to be sent; past it they are
// dropped (the others read them from the log after relayGrace).
const relayQueue = 4096

// relayMaxFrame bounds a frame a reader accepts.
const relayMaxFrame = 64 << 20

// relayClient is a Store's connection to the relay.
type relayClient struct {
	addr string
	out  chan []byte // encoded frames, in commit order
}

// relaySend queues the events the writer just committed for the relay.
// It never blocks the writer.
func (s *Store) relaySend(evs []agent.Encoded) {
	if s.relay == nil || !s.postgres || len(evs) == 0 {
		return
	}
	select {
	case s.relay.out <- encodeFrame(evs):
	default: // full: the others read these from the log
	}
}

// runRelay connects to the relay until ctx ends, sending the queued
// frames and publishing the frames other instances sent. It returns when
// ctx ends.
func (s *Store) runRelay(ctx context.Context) {
	backoff := eventlog.ListenBackoffMin
	for ctx.Err() == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", s.relay.addr)
		if err != nil {
			s.log.Warn("event_relay_connect", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, eventlog.ListenBackoffMax)
			continue
		}
		backoff = eventlog.ListenBackoffMin
		err = s.relayConn(ctx, conn)
		if ctx.Err() == nil {
			s.log.Warn("event_relay_lost", "err", err)
		}
	}
}

// relayConn serves one connection until it fails or ctx ends.
func (s *Store) relayConn(ctx context.Context, conn net.Conn) error {
	ctx, cancel := context.WithCancel(ctx) // ends the sending goroutine
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(conn)
		for {
			var f []byte
			select {
			case f = <-s.relay.out:
			case <-ctx.Done():
				werr <- nil
				return
			}
			if _, err := w.Write(f); err != nil {
				werr <- err
				conn.Close()
				return
			}
			if len(s.relay.out) == 0 { // a burst goes out in one write
				if err := w.Flush(); err != nil {
					werr <- err
					conn.Close()
					return
				}
			}
		}
	}()
	r := bufio.NewReaderSize(conn, relayReadBuffer)
	for {
		batches, err := readBurst(r)
		if err != nil {
			cancel()
			return errors.Join(err, <-werr)
		}
		for _, evs := range batches {
			// Publish them from memory, after the gap below them read
			// from the log (catchUp's own: contiguous).
			if err := s.publishUpTo(ctx, evs[len(evs)-1].Seq, evs); err != nil {
				s.log.Warn("event_relay_publish", "err", err)
			}
		}
	}
}

// relayReadBuffer is the relay connection's read buffer: a burst of
// frames that fits is published as one batch (readBurst).
const relayReadBuffer = 256 << 10

// readBurst reads one frame, then every whole frame already buffered, and
// returns their events as batches of contiguous seqs: a burst of commits
// (one frame each) is published as one batch, as the listener's one read
// after many notifications is, instead of one publish per commit (which
// cost twice the CPU per event once the instance running the turns was
// saturated, docs/BENCHMARKS.md).
func readBurst(r *bufio.Reader) ([][]agent.Encoded, error) {
	var out [][]agent.Encoded
	add := func(evs []agent.Encoded) {
		if len(evs) == 0 {
			return
		}
		if n := len(out); n > 0 {
			last := out[n-1]
			if evs[0].Seq == last[len(last)-1].Seq+1 {
				out[n-1] = append(last, evs...)
				return
			}
		}
		out = append(out, evs)
	}
	evs, err := readFrame(r)
	if err != nil {
		return nil, err
	}
	add(evs)
	for r.Buffered() >= 4 {
		h, _ := r.Peek(4)
		if r.Buffered() < 4+int(binary.BigEndian.Uint32(h)) {
			break // the rest of the burst is still on its way
		}
		evs, err := readFrame(r)
		if err != nil {
			return nil, err
		}
		add(evs)
	}
	return out, nil
}

// relayLate is the listener's answer to another instance's notice when a
// relay runs: if the relay has not brought seq within relayGrace, read it
// from the log. Notices that come while a check waits join it.
func (s *Store) relayLate(ctx context.Context, seq int64) {
	s.lateMu.Lock()
	defer s.lateMu.Unlock()
	s.lateSeq = max(s.lateSeq, seq)
	if s.lateArmed {
		return
	}
	s.lateArmed = true
	s.lateWG.Add(1)
	go func() {
		defer s.lateWG.Done()
		t := time.NewTimer(relayGrace)
		defer t.Stop()
		select {
		case <-ctx.Done(): // closing: nothing more is published
			return
		case <-t.C:
		}
		s.lateMu.Lock()
		seq := s.lateSeq
		s.lateArmed = false
		s.lateMu.Unlock()
		if err := s.publishUpTo(ctx, seq, nil); err != nil && ctx.Err() == nil {
			s.log.Warn("event_relay_late", "err", err, "through_seq", seq)
		}
	}()
}

// A frame is a 4-byte big-endian length, then a uvarint count of events,
// each a varint seq and the uvarint-length-prefixed id, kind, conversation
// id, owner and stored JSON.
func encodeFrame(evs []agent.Encoded) []byte {
	n := 4 + binary.MaxVarintLen64
	for _, e := range evs {
		n += binary.MaxVarintLen64 * 6
		n += len(e.ID) + len(e.Kind) + len(e.ConversationID) + len(e.Owner) + len(e.JSON)
	}
	b := make([]byte, 4, n)
	b = binary.AppendUvarint(b, uint64(len(evs)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, e := range evs {
		b = binary.AppendVarint(b, e.Seq)
		str(e.ID)
		str(e.Kind)
		str(e.ConversationID)
		str(e.Owner)
		b = binary.AppendUvarint(b, uint64(len(e.JSON)))
		b = append(b, e.JSON...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readRaw reads one frame's bytes, length prefix included.
func readRaw(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > relayMaxFrame {
		return nil, fmt.Errorf("relay: frame of %d bytes", n)
	}
	b := make([]byte, 4+n)
	copy(b, h[:])
	if _, err := io.ReadFull(r, b[4:]); err != nil {
		return nil, err
	}
	return b, nil
}

// readFrame reads and decodes one frame.
func readFrame(r io.Reader) ([]agent.Encoded, error) {
	b, err := readRaw(r)
	if err != nil {
		return nil, err
	}
	return decodeFrame(b[4:])
}

var errFrame = errors.New("relay: malformed frame")

func decodeFrame(b []byte) ([]agent.Encoded, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return nil, errFrame
	}
	b = b[k:]
	field := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		f := b[k : k+int(n)]
		b = b[k+int(n):]
		return f, true
	}
	out := make([]agent.Encoded, 0, count)
	for range count {
		seq, k := binary.Varint(b)
		if k <= 0 {
			return nil, errFrame
		}
		b = b[k:]
		var fs [5][]byte
		for i := range fs {
			f, ok := field()
			if !ok {
				return nil, errFrame
			}
			fs[i] = f
		}
		e := agent.StoredEvent(seq, string(fs[0]), string(fs[1]), string(fs[2]), fs[4])
		e.Owner = string(fs[3])
		out = append(out, e)
	}
	return out, nil
}

// ServeRelay is the EXPERIMENTAL relay itself (the bench runs it; see the
// top of this file): it forwards every frame a connection sends to every
// other connection, in the order it read them, until ln is closed. A
// connection whose queue is full loses frames (its instance reads them
// from the log).
func ServeRelay(ln net.Listener) error {
	var (
		mu    sync.Mutex
		peers = map[chan []byte]bool{}
		wg    sync.WaitGroup
	)
	defer wg.Wait()
	var conns []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		out := make(chan []byte, relayQueue)
		mu.Lock()
		peers[out] = true
		conns = append(conns, conn)
		mu.Unlock()
		wg.Add(2)
		go func() { // writes what the others sent
			defer wg.Done()
			w := bufio.NewWriter(conn)
			for f := range out {
				if _, err := w.Write(f); err != nil {
					conn.Close()
					for range out { // drain until the reader removes it
					}
					return
				}
				if len(out) == 0 {
					if w.Flush() != nil {
						conn.Close()
					}
				}
			}
		}()
		go func() { // reads what it sends, to everyone else
			defer wg.Done()
			r := bufio.NewReader(conn)
			for {
				f, err := readRaw(r)
				if err != nil {
					break
				}
				mu.Lock()
				for p := range peers {
					if p == out {
						continue
					}
					select {
					case p <- f:
					default: // that peer falls back on the log
					}
				}
				mu.Unlock()
			}
			conn.Close()
			mu.Lock()
			delete(peers, out)
			mu.Unlock()
			close(out)
		}()
	}
}
