package eventlog

import (
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
)

// TestDeltaLogReadsOwnerPastSegment: a read of an owner's records with a
// limit goes on past a segment that held more records than the limit but
// fewer of the owner's: it stopped there, short of its limit, so the
// merge took it as complete through its bound and a page lost the
// owner's deltas of the next segments.
func TestDeltaLogReadsOwnerPastSegment(t *testing.T) {
	t.Parallel()
	l, err := OpenDeltaLog(filepath.Join(t.TempDir(), "d.db"), "e", slog.New(slog.DiscardHandler), func(p string) (string, error) { return p, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.segMax = 1 << 10
	for seq := int64(1); seq <= 40; seq++ {
		owner := "bob"
		if seq > 20 {
			owner = "ann"
		}
		if err := l.Append([]Delta{{Seq: seq, Conv: "c", Owner: owner, ID: fmt.Sprint(seq), JSON: []byte(`{"text":"0123456789012345678901234567890123456789"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(l.segs))
	}
	got, err := l.Read(0, math.MaxInt64, 5, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Seq != 21 || got[4].Seq != 25 {
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		t.Errorf("ann's first 5: %v, want 21 to 25", seqs)
	}
}
