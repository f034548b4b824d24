package eventlog

import (
	"math"
	"slices"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestMergeCutsAtTheShorterRead: two reads of the log merged by seq are cut
// where the one that stopped at its limit stops vouching (ReadEnd), so no
// seq of the other is kept past a hole; Page then bounds the result by
// count and bytes.
func TestMergeCutsAtTheShorterRead(t *testing.T) {
	t.Parallel()
	evs := func(seqs ...int64) []agent.Encoded {
		out := make([]agent.Encoded, len(seqs))
		for i, s := range seqs {
			out[i] = agent.Encoded{Seq: s, JSON: []byte("0123456789")}
		}
		return out
	}
	seqsOf := func(es []agent.Encoded) []int64 {
		var out []int64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	table := evs(1, 2, 5, 9)       // stopped at its limit of 4: vouches through 9
	deltas := evs(3, 4, 6, 10, 11) // under its limit: vouches through the read's end
	end := min(ReadEnd(table, 4, 0, 20), ReadEnd(deltas, 6, 0, 20))
	if end != 9 {
		t.Fatalf("ReadEnd: %d, want 9 (the table's read stopped there)", end)
	}
	if got := seqsOf(Merge(table, deltas, end)); !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6, 9}) {
		t.Errorf("Merge through 9: %v", got)
	}
	if got := ReadEnd(evs(1, 2), 0, 15, math.MaxInt64); got != 2 {
		t.Errorf("ReadEnd of a read that reached its 15 bytes: %d, want 2", got)
	}
	all := Merge(table, deltas, math.MaxInt64)
	if got := seqsOf(Page(all, 3, 0)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("Page of 3: %v", got)
	}
	if got := seqsOf(Page(all, 0, 25)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("Page of 25 bytes: %v, want the event that reaches them last", got)
	}
}
