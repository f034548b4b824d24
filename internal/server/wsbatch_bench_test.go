//go:build unix

package server

import (
	"bytes"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBatchConnSend is one live frame written to a loopback TCP
// socket through a WebSocket's batchConn, as a streaming connection's
// writer sends each token: the write deadline and the stall watch around
// the system call. cpu-ns/op is the process's CPU time (the reader's
// included) per frame.
func BenchmarkBatchConnSend(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	bc := &batchConn{Conn: c, timeout: WSWriteTimeout, stallAfter: wsStallTimeout, onStall: func() {}}
	frame := bytes.Repeat([]byte("x"), 120)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for range b.N {
		if _, err := bc.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkLiveFrame is a live event's frame as a WebSocket subscription's
// turn builds it, copied as coder/websocket copies it when written:
// pooled is the frameBufs buffer turn uses, alloc a buffer made per
// frame as the old eventFrame made it (2 bytes short: allocated twice). Both run in one process, alternated by
// the benchmark's own order, so the machine's load weighs on both alike.
func BenchmarkLiveFrame(b *testing.B) {
	ev := []byte(`{"kind":"conversation","seq":123456,"id":"ev_01JQ7ZP5R5M0Y2T8W4","date":"2026-12-02T06:00:00.123456Z","conversation_id":"c_01JQ7ZP5R5M0Y2T8W4","owner":"local","event":{"type":"append_text","text":" token"}}`)
	sink := make([]byte, 0, 4<<10)
	for _, mode := range []string{"pooled", "alloc"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for range b.N {
				if mode == "pooled" {
					f := appendEventFrame(getFrameBuf(), "s1", ev)
					sink = append(sink[:0], f...)
					putFrameBuf(f)
				} else {
					f := appendEventFrame(make([]byte, 0, len(ev)+len("s1")+32), "s1", ev)
					sink = append(sink[:0], f...)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
