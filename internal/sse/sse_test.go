package sse_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/agentik/agentik/internal/sse"
)

func TestWriterFrames(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("X-Request-Id", "req_1")
	w := sse.Start(rec)
	w.Seq(7, "append_text", []byte(`{"a":1}`))
	w.Seq(0, "caught_up", []byte(`{}`))
	w.Event("resp_1:2", "", []byte("two\nlines"))
	w.Data([]byte("[DONE]"))
	w.Comment("heartbeat")
	if w.Buffered() == 0 {
		t.Fatal("nothing buffered")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := rec.Body.String()
	want := "id: 7\nevent: append_text\ndata: {\"a\":1}\n\n" +
		"event: caught_up\ndata: {}\n\n" +
		"id: resp_1:2\ndata: two\ndata: lines\n\n" +
		"data: [DONE]\n\n" +
		": heartbeat\n\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	h := rec.Header()
	if rec.Code != 200 || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" ||
		h.Get("X-Accel-Buffering") != "no" || h.Get("X-Request-Id") != "req_1" || !rec.Flushed {
		t.Fatalf("status %d headers %v flushed %v", rec.Code, h, rec.Flushed)
	}
}

// failing is a ResponseWriter whose writes fail after the headers.
type failing struct{ *httptest.ResponseRecorder }

func (failing) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriterStickyError(t *testing.T) {
	w := sse.Start(failing{httptest.NewRecorder()})
	w.Data([]byte("x"))
	if err := w.Flush(); err == nil {
		t.Fatal("flush succeeded")
	}
	w.Data([]byte("y"))
	if err := w.Flush(); err != io.ErrClosedPipe {
		t.Fatalf("second flush: %v", err)
	}
}

func TestGroup(t *testing.T) {
	g := sse.NewGroup()
	if !g.Hold() {
		t.Fatal("hold refused before shutdown")
	}
	done := make(chan error)
	go func() { done <- g.Shutdown(context.Background()) }()
	<-g.Closing()
	if g.Hold() {
		t.Fatal("hold granted after shutdown began")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Shutdown(ctx); err != context.Canceled {
		t.Fatalf("shutdown with a held stream and a done ctx: %v", err)
	}
	g.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
