package server

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// Without an injected limiter, a connection gets the documented token
// bucket; without an injected clock, the strike window runs on time.Now.
func TestWSDefaultLimiterAndClock(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	l, ok := s.newLimiter().(*rate.Limiter)
	if !ok {
		t.Fatalf("default limiter is %T, want *rate.Limiter", s.newLimiter())
	}
	if l.Limit() != WSCommandRate || l.Burst() != WSCommandBurst {
		t.Errorf("default limiter: %v/s, burst %d; want %v/s, burst %d", l.Limit(), l.Burst(), WSCommandRate, WSCommandBurst)
	}
	if d := time.Since(s.now()); d < 0 || d > time.Hour {
		t.Errorf("default clock is %v off time.Now", d)
	}
}
