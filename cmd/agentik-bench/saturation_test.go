package main

import (
	"slices"
	"strings"
	"testing"
)

// The saturation search doubles the pace until a step fails, then
// bisects (geometrically) until the failed pace is within satResolution
// of the held one; a first step that fails halves, down to the floor; the
// steps and the limit bound it.
func TestPaceSearch(t *testing.T) {
	for _, c := range []struct {
		name                       string
		first, floor, limit, steps int
		holds                      int // a step holds up to this pace
		paces                      []int
		held                       int
	}{
		{"bisects", 100, 1, 3200, 8, 250, []int{100, 200, 400, 283, 238}, 238},
		{"holds at the limit", 100, 1, 3200, 8, 5000, []int{100, 200, 400, 800, 1600, 3200}, 3200},
		{"halves from a first that fails", 100, 1, 3200, 8, 30, []int{100, 50, 25, 35, 30}, 30},
		{"steps run out", 100, 1, 3200, 3, 250, []int{100, 200, 400}, 200},
		{"none holds", 100, 1, 3200, 4, 0, []int{100, 50, 25, 12}, 0},
		{"none holds above the floor", 100, 20, 3200, 8, 0, []int{100, 50, 25}, 0},
		{"a first under the floor", 0, 12, 3200, 2, 100, []int{12, 24}, 24},
		{"a held pace one below the failed", 2, 1, 3200, 8, 2, []int{2, 4, 3}, 2},
	} {
		s := paceSearch{first: c.first, floor: c.floor, limit: c.limit, steps: c.steps}
		var got []int
		for p := s.next(); p > 0; p = s.next() {
			got = append(got, p)
			s.record(p, p <= c.holds)
		}
		if !slices.Equal(got, c.paces) || s.held != c.held {
			t.Errorf("%s: paces %v, held %d; want %v, %d", c.name, got, s.held, c.paces, c.held)
		}
	}
}

// Issue 54 leaves only the soak out of the default run.
func TestDefaultRunHasSaturation(t *testing.T) {
	names := strings.Split(defaultRun(), ",")
	if !slices.Contains(names, "saturation") || slices.Contains(names, "soak") || len(names) != len(scenarios)-1 {
		t.Errorf("default run %v; want every scenario but soak", names)
	}
}
