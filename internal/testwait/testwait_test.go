package testwait

import (
	"errors"
	"sync/atomic"
	"testing"
)

// TestForReturnsOnceTheConditionHolds: For re-checks until the condition
// holds, and ForErr until it returns nil.
func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	For(t, "the third check", func() bool { return n.Add(1) == 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times, want 3", n.Load())
	}
	n.Store(0)
	ForErr(t, "the second check", func() error {
		if n.Add(1) < 2 {
			return errors.New("not yet")
		}
		return nil
	})
	if n.Load() != 2 {
		t.Fatalf("checked %d times, want 2", n.Load())
	}
}
