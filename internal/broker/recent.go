package broker

import (
	"sync"

	"github.com/agentik/agentik/internal/agent"
)

// RecentLimit is how many of the latest stored events the broker keeps in
// memory (their bytes, shared with the subscribers' queues), and
// recentBytes bounds their size. A subscriber resuming from a cursor they
// cover replays from memory instead of the database: after a reconnect
// storm a thousand clients resume from one copy, without a thousand
// queries.
const (
	RecentLimit = 4096
	recentBytes = 16 << 20
)

// recent is a ring of the latest published stored events, contiguous in
// seq (the store publishes every committed event once, in seq order).
type recent struct {
	mu    sync.Mutex
	ring  []*agent.Encoded // ring[(start+i)%len]: the i-th oldest
	start int
	n     int
	bytes int
}

// add keeps the stored events of evs, dropping the oldest beyond the
// bounds. A seq that does not follow the newest kept one (a gap, after a
// prune or a restart of the feed) starts over, and so does a deleted
// event: the store redacts the deleted conversation's logged events, and
// a replay must never serve what they said.
func (r *recent) add(evs []agent.Encoded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ring == nil {
		r.ring = make([]*agent.Encoded, RecentLimit)
	}
	for i := range evs {
		e := &evs[i]
		if e.Seq == 0 {
			continue // never stored: not replayable
		}
		if r.n > 0 && (e.Seq != r.at(r.n-1).Seq+1 || e.Kind == agent.KindAgent && e.Type == agent.AgentDeleted) {
			clear(r.ring)
			r.start, r.n, r.bytes = 0, 0, 0
		}
		for r.n > 0 && (r.n == len(r.ring) || r.bytes+len(e.JSON) > recentBytes) {
			r.bytes -= len(r.at(0).JSON)
			r.ring[r.start] = nil
			r.start = (r.start + 1) % len(r.ring)
			r.n--
		}
		r.ring[(r.start+r.n)%len(r.ring)] = e
		r.n++
		r.bytes += len(e.JSON)
	}
}

func (r *recent) at(i int) *agent.Encoded { return r.ring[(r.start+i)%len(r.ring)] }

// after returns up to limit events of stream with seq > cursor, and
// whether the ring covers every stored event after cursor (if not, the
// caller reads the database).
func (r *recent) after(cursor int64, stream Stream, limit int) ([]*agent.Encoded, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 || r.at(0).Seq > cursor+1 {
		return nil, false
	}
	var out []*agent.Encoded
	for i := max(0, int(cursor+1-r.at(0).Seq)); i < r.n && len(out) < limit; i++ {
		if e := r.at(i); stream.Match(e) {
			out = append(out, e)
		}
	}
	return out, true
}
