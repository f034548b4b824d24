package agent

import (
	"testing"
	"time"
)

func TestPaceLingersOnlyForFastStreams(t *testing.T) {
	start := time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		gap   time.Duration
		holds int // of 10 pieces
	}{
		{"50 tokens/s", 20 * time.Millisecond, 0},
		{"100 tokens/s", 10 * time.Millisecond, 0},
		{"1000 tokens/s", time.Millisecond, 9}, // all but the first
		{"a burst", 0, 9},
	} {
		var p pace
		holds := 0
		for i := range 10 {
			if p.hold(start.Add(time.Duration(i) * tc.gap)) {
				holds++
			}
		}
		if holds != tc.holds {
			t.Errorf("%s: %d of 10 pieces lingered, want %d", tc.name, holds, tc.holds)
		}
	}
}
