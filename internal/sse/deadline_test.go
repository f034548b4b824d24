package sse

import (
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that counts the write deadlines
// set on it (http.ResponseController finds SetWriteDeadline on it).
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	sets     int
	deadline time.Time
}

func (r *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	r.sets++
	r.deadline = t
	return nil
}

// TestFlushMovesTheDeadlineOncePerSlack: a stream of flushes sets the
// write deadline once, not once a flush, and every write still has at
// least the timeout ahead of it.
func TestFlushMovesTheDeadlineOncePerSlack(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := Start(rec)
	for i := range 100 {
		w.Data([]byte("token"))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		// Measured after the flush: the deadline was at least this far
		// ahead when it began.
		if left := time.Until(rec.deadline); left < WriteTimeout || left > WriteTimeout+WriteTimeout/deadlineSlack {
			t.Fatalf("flush %d: deadline %s ahead, want [%s, %s]", i, left, WriteTimeout, WriteTimeout+WriteTimeout/deadlineSlack)
		}
	}
	if rec.sets != 1 {
		t.Fatalf("%d deadlines set for 100 flushes, want 1", rec.sets)
	}
	// Once the deadline is nearer than the timeout, the next flush moves it.
	w.deadline = time.Now().Add(WriteTimeout - time.Second)
	w.Data([]byte("token"))
	w.Flush()
	if rec.sets != 2 || time.Until(rec.deadline) < WriteTimeout {
		t.Fatalf("%d deadlines set, the last %s ahead", rec.sets, time.Until(rec.deadline))
	}
}
