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
