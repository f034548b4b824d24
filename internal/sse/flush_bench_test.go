//go:build unix

package sse_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/sse"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriterFlush is one live frame flushed to an HTTP/1.1 client
// over loopback, as an SSE stream sends each token: the write deadline,
// the write and the flush. cpu-ns/op is the process's CPU time (the
// client's reading included) per frame.
func BenchmarkWriterFlush(b *testing.B) {
	frame := []byte(`{"type":"append_text","text":" token"}`)
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := sse.Start(rw)
		for i := range b.N {
			w.Seq(int64(i+1), "append_text", frame)
			if err := w.Flush(); err != nil {
				b.Error(err)
				return
			}
		}
	}))
	defer ts.Close()
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	resp, err := http.Get(ts.URL)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
