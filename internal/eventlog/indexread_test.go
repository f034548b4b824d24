package eventlog

import (
	"slices"
	"testing"

	"github.com/agentik/agentik/internal/agent"
)

// TestReadByIndex: the index's seqs, then the waiting ones (one in both
// read once), their rows in chunks, a dense stretch read as a range and a
// sparse one by seqs, a limit ending the read.
func TestReadByIndex(t *testing.T) {
	ix := NewRunIndex(nil, 0)
	ix.Defer([]RunEntry{{Key: "k", Seq: 9}, {Key: "k", Seq: 10}, {Key: "other", Seq: 11}})
	stored := []int64{1, 2, 3, 100, 9} // 9: its entry was written since the waiting ones were taken
	var reads []string
	read := IndexRead{Index: ix, Key: "k",
		Seqs: func(after int64, want int) ([]int64, bool, error) {
			var out []int64
			for _, s := range stored {
				if s > after {
					out = append(out, s)
				}
			}
			slices.Sort(out)
			return out, false, nil
		},
		Rows: func(chunk []int64, dense bool, limit, budget int) ([]agent.Encoded, error) {
			kind := "seqs"
			if dense {
				kind = "range"
			}
			reads = append(reads, kind)
			var evs []agent.Encoded
			for _, s := range chunk {
				if limit > 0 && len(evs) == limit {
					break
				}
				evs = append(evs, agent.Encoded{Seq: s, JSON: []byte("{}")})
			}
			return evs, nil
		},
	}
	seqsOf := func(evs []agent.Encoded) []int64 {
		var out []int64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return out
	}
	evs, err := ReadByIndex(read)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(evs); !slices.Equal(got, []int64{1, 2, 3, 9, 10, 100}) {
		t.Errorf("read %v, want [1 2 3 9 10 100]", got)
	}
	if !slices.Equal(reads, []string{"seqs"}) {
		t.Errorf("reads %v, want one by seqs (1…100 is sparse)", reads)
	}
	stored, reads = []int64{1, 2, 3}, nil
	read.Limit = 4
	if evs, err = ReadByIndex(read); err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(evs); !slices.Equal(got, []int64{1, 2, 3, 9}) || !slices.Equal(reads, []string{"range"}) {
		t.Errorf("limit 4: read %v by %v, want [1 2 3 9] by one range", got, reads)
	}
}
