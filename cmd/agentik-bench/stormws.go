package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/protocol"
)

// stormConn is the storm's reconnecting client: one TCP connection with a
// hand-written upgrade (RFC 6455 §4.1, no extensions offered) and a frame
// reader that runs on the caller's goroutine. The bench is the instrument,
// sharing the 2 cores with the server it measures; coder/websocket's Dial
// (an http.Client round trip, a reader goroutine, a reply channel per
// command) cost more CPU per reconnect than the server spent. What it
// checks is unchanged: every frame is decoded by decodeFrame, and the
// upgrade's Sec-WebSocket-Accept is verified.
type stormConn struct {
	nc   net.Conn
	br   *bufio.Reader
	msg  []byte      // a fragmented message being joined; reused
	skip int         // bytes of br to discard before the next read: the last message, read in place
	out  []byte      // the frame being written; reused
	id   int         // the last command id
	stop func() bool // ends the context's AfterFunc that closes nc
}

// stormReaders are the connections' read buffers: a resume's packed
// replay is one message of ~20 KB, read through this.
var stormReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// wsGUID is RFC 6455's key suffix.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// dialStorm connects to the ws:// URL rawURL and upgrades. deadline bounds
// the whole connection (every read and write).
func dialStorm(ctx context.Context, rawURL string, deadline time.Time) (*stormConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", rawURL, err)
	}
	_ = nc.SetDeadline(deadline)
	c := &stormConn{nc: nc, br: stormReaders.Get().(*bufio.Reader)}
	c.stop = context.AfterFunc(ctx, func() { _ = nc.Close() }) // a cancelled bench ends the reads
	c.br.Reset(nc)
	if err := c.upgrade(u); err != nil {
		c.Close()
		return nil, fmt.Errorf("dial %s: %w", rawURL, err)
	}
	return c, nil
}

// upgrade writes the opening handshake and reads the server's 101.
func (c *stormConn) upgrade(u *url.URL) error {
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(raw[8:], rand.Uint64())
	key := base64.StdEncoding.EncodeToString(raw[:])
	req := make([]byte, 0, 256)
	req = append(req, "GET "...)
	req = append(req, u.RequestURI()...)
	req = append(req, " HTTP/1.1\r\nHost: "...)
	req = append(req, u.Host...)
	req = append(req, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "...)
	req = append(req, key...)
	req = append(req, "\r\n\r\n"...)
	if _, err := c.nc.Write(req); err != nil {
		return err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 101 ")) {
		return fmt.Errorf("upgrade: %q", bytes.TrimSpace(line))
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	want := base64.StdEncoding.EncodeToString(sum[:])
	accepted := false
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if ok && bytes.EqualFold(name, []byte("Sec-WebSocket-Accept")) {
			accepted = string(bytes.TrimSpace(value)) == want
		}
	}
	if !accepted {
		return errors.New("upgrade: no or wrong Sec-WebSocket-Accept")
	}
	return nil
}

// write sends one masked frame of opcode op.
func (c *stormConn) write(op byte, p []byte) error {
	b := append(c.out[:0], 0x80|op)
	switch n := len(p); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	var mask [4]byte
	binary.LittleEndian.PutUint32(mask[:], rand.Uint32())
	b = append(b, mask[:]...)
	for i, x := range p {
		b = append(b, x^mask[i&3])
	}
	c.out = b
	_, err := c.nc.Write(b)
	return err
}

// subscribe sends a subscribe command resuming after `after`.
func (c *stormConn) subscribe(convID string, after int64) error {
	c.id++
	b, err := json.Marshal(protocol.Command{Op: protocol.OpSubscribe, ID: strconv.Itoa(c.id), Stream: "conversation", ConversationID: convID, After: &after})
	if err != nil {
		return err
	}
	return c.write(0x1, b)
}

// message reads the next data message (its frames joined), answering
// pings on the way; the bytes are valid until the next call.
func (c *stormConn) message() ([]byte, error) {
	if c.skip > 0 {
		_, _ = c.br.Discard(c.skip)
		c.skip = 0
	}
	c.msg = c.msg[:0]
	for {
		var h [2]byte
		if _, err := io.ReadFull(c.br, h[:]); err != nil {
			return nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0f
		if h[0]&0x70 != 0 || h[1]&0x80 != 0 {
			return nil, errors.New("ws: reserved bits or a masked server frame")
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(c.br, e[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(c.br, e[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(e[:])
		}
		if n > 64<<20 {
			return nil, fmt.Errorf("ws: frame of %d bytes", n)
		}
		if op >= 0x8 { // control: at most 125 bytes, never fragmented
			var p [125]byte
			if n > 125 || !fin {
				return nil, errors.New("ws: bad control frame")
			}
			if _, err := io.ReadFull(c.br, p[:n]); err != nil {
				return nil, err
			}
			switch op {
			case 0x8:
				return nil, fmt.Errorf("ws: closed by the server: %q", p[:n])
			case 0x9:
				if err := c.write(0xA, p[:n]); err != nil {
					return nil, err
				}
			}
			continue
		}
		if fin && len(c.msg) == 0 && int(n) <= c.br.Size() {
			// The whole message fits the read buffer: read it in place.
			p, err := c.br.Peek(int(n))
			if err != nil {
				return nil, err
			}
			c.skip = int(n)
			return p, nil
		}
		old := len(c.msg)
		c.msg = append(c.msg, make([]byte, n)...)
		if _, err := io.ReadFull(c.br, c.msg[old:]); err != nil {
			return nil, err
		}
		if fin {
			return c.msg, nil
		}
	}
}

// Close closes the connection and gives its read buffer back.
func (c *stormConn) Close() {
	if c.nc == nil {
		return
	}
	c.stop()
	_ = c.nc.Close()
	c.br.Reset(nil)
	stormReaders.Put(c.br)
	c.nc, c.br = nil, nil
}

// resume subscribes from after and reads until caught_up, handing every
// event frame to sc.on. A slow consumer's resync is part of the protocol:
// it resubscribes from the resync's cursor, as a client does, and counts it.
func (c *stormConn) resume(sc *stormClient, convID string, after int64) (resyncs int, err error) {
	if err := c.subscribe(convID, after); err != nil {
		return 0, err
	}
	var f frame
	var ev wireEvent
	for caughtUp := false; !caughtUp; {
		m, err := c.message()
		if err != nil {
			return resyncs, err
		}
		// A packed message (?pack=1) holds several frames, one per line.
		for b := range bytes.SplitSeq(m, []byte{'\n'}) {
			if err := decodeFrame(b, &f, &ev, skimSeqs); err != nil {
				return resyncs, fmt.Errorf("decode frame %.200s: %w", b, err)
			}
			switch f.Type {
			case protocol.FrameReply:
				if !f.OK {
					return resyncs, fmt.Errorf("subscribe: %v", f.Error)
				}
			case protocol.FrameEvent:
				sc.on(&f, time.Time{})
			case protocol.FrameCaughtUp: // the message's later frames are read too
				caughtUp = true
			case protocol.FrameResync:
				resyncs++
				if err := c.subscribe(convID, f.After); err != nil {
					return resyncs, err
				}
			}
		}
	}
	return resyncs, nil
}

// machineCPU reads the whole machine's busy and total CPU time so far, in
// clock ticks (/proc/stat's first line; ok false elsewhere). Across the
// storm's phase, the cores' busy share minus the two processes' own CPU
// says whether the phase's time went to others (a loaded machine) or to
// waiting (idle cores while clients had not caught up).
func machineCPU() (busy, total int64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i < 8 { // user … steal; guest is counted in user already
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
	}
	return busy, total, true
}
