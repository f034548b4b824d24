package agent

import (
	"testing"
	"time"
)

func TestPaceLingersOnlyForFastStreams(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC)
	const ms = time.Millisecond
	every := func(gap time.Duration) []time.Duration {
		gaps := make([]time.Duration, 20)
		for i := range gaps {
			gaps[i] = gap
		}
		return gaps
	}
	// A 50 tokens/s stream whose reader stalled twice: each stall delivers
	// the tokens it held back together.
	stalled := []time.Duration{0, 20 * ms, 20 * ms, 60 * ms, 0, 0, 20 * ms, 20 * ms, 20 * ms, 20 * ms, 100 * ms, 0, 0, 0, 0, 20 * ms, 20 * ms, 20 * ms, 20 * ms, 20 * ms}
	for _, tc := range []struct {
		name  string
		gaps  []time.Duration // before each of 20 pieces
		holds int
	}{
		{"50 tokens/s", every(20 * ms), 0},
		{"100 tokens/s", every(10 * ms), 0},
		{"50 tokens/s with stalls", stalled, 0},
		{"150 tokens/s", every(6600 * time.Microsecond), 12}, // all but the first paceWindow
		{"1000 tokens/s", every(ms), 12},
		{"a burst", every(0), 12},
	} {
		var p pace
		holds, at := 0, start
		for _, gap := range tc.gaps {
			at = at.Add(gap)
			if p.hold(at) {
				holds++
			}
		}
		if holds != tc.holds {
			t.Errorf("%s: %d of %d pieces lingered, want %d", tc.name, holds, len(tc.gaps), tc.holds)
		}
	}
}
