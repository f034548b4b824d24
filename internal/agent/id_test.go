package agent

import (
	"testing"
	"time"
)

// Ids are 32 hex digits that sort by the millisecond they were made in, so
// the database's indexes over them grow at one end; within a millisecond
// they are random.
func TestNewIDSortsByTime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	prev := newIDAt(t0)
	seen := map[string]bool{prev: true}
	for i := 1; i < 1000; i++ {
		id := newIDAt(t0.Add(time.Duration(i) * time.Millisecond))
		if len(id) != 32 {
			t.Fatalf("id %q has %d characters, want 32", id, len(id))
		}
		if id <= prev {
			t.Fatalf("id %q made a millisecond after %q sorts before it", id, prev)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id], prev = true, id
	}
	a, b := newIDAt(t0), newIDAt(t0)
	if a == b {
		t.Errorf("two ids of one millisecond are equal: %q", a)
	}
	if a[:12] != b[:12] {
		t.Errorf("ids of one millisecond differ in their time part: %q, %q", a, b)
	}
}
