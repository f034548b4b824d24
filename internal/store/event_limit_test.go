package store

import "testing"

// withLimit never writes into the caller's arguments, which a read shares
// across its pages: two pages of different limits from one argument slice
// with room to spare each get their own limit.
func TestWithLimitLeavesArgs(t *testing.T) {
	shared := make([]any, 1, 4)
	shared[0] = "conversation"
	_, a := withLimit(10, shared)
	_, b := withLimit(20, shared)
	if len(shared) != 1 || a[1] != 10 || b[1] != 20 {
		t.Errorf("shared %v, first page %v, second %v: want each its own limit", shared, a, b)
	}
	if q, c := withLimit(0, shared); q != "" || len(c) != 1 {
		t.Errorf("no limit: %q %v", q, c)
	}
}
