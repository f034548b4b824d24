package eventlog

import "github.com/agentik/agentik/internal/agent"

// The merge of the two logs' reads: a read of the log on SQLite in fast
// mode reads the events' table and the delta log, each cut at the seq
// committed when the read began, and merges them by seq, so a commit that
// lands between the two reads leaves no hole.

// Merge merges two seq-ordered reads of the log, from agent_event and
// from the delta log, through seq through (ReadEnd: a read that stopped at
// a bound vouches only for seqs up to its last).
func Merge(a, b []agent.Encoded, through int64) []agent.Encoded {
	out := make([]agent.Encoded, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var e agent.Encoded
		if j == len(b) || (i < len(a) && a[i].Seq < b[j].Seq) {
			e = a[i]
			i++
		} else {
			e = b[j]
			j++
		}
		if e.Seq > through {
			break
		}
		out = append(out, e)
	}
	return out
}

// ReadEnd is the seq through which a read of at most limit events and
// maxBytes bytes (each ≤ 0: no bound) is complete, given that it read
// nothing above through: its last event's seq if it stopped at a bound.
func ReadEnd(evs []agent.Encoded, limit, maxBytes int, through int64) int64 {
	if len(evs) == 0 {
		return through
	}
	if limit > 0 && len(evs) >= limit {
		return evs[len(evs)-1].Seq
	}
	if maxBytes > 0 {
		total := 0
		for _, e := range evs {
			total += len(e.JSON)
		}
		if total >= maxBytes {
			return evs[len(evs)-1].Seq
		}
	}
	return through
}

// Page cuts evs to a page: at most limit events, ending after the one
// whose JSON brings the total to maxBytes (each ≤ 0: no bound).
func Page(evs []agent.Encoded, limit, maxBytes int) []agent.Encoded {
	if limit > 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	if maxBytes > 0 {
		total := 0
		for i, e := range evs {
			if total += len(e.JSON); total >= maxBytes {
				return evs[:i+1]
			}
		}
	}
	return evs
}
