package store

import (
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// The delta log's file is eventlog.DeltaLog (internal/eventlog/deltalog.go
// says how it works); here is what the store does with it: the writer's
// commit of text deltas to it (commitSide) and the merge of its reads with
// agent_event's (eventlog.Merge).

// commitSide commits, outside SQLite, the requests of batch that need no
// more than the delta log (sideable), as one group commit, and returns
// them and their events (the writer publishes and answers them) and the
// others, for a transaction (eventlog.Hooks.Side). If the append fails,
// every request goes to the transaction.
func (s *Store) commitSide(batch []*request) (took, others []*request, evs []agent.Encoded) {
	if s.side == nil {
		return nil, batch, nil
	}
	var side, rest []*request
	room := &s.sideRoom
	clear(room.conv)
	clear(room.owner)
	for _, r := range batch {
		if s.sideable(r, room) {
			side = append(side, r)
		} else {
			rest = append(rest, r)
		}
	}
	if len(side) == 0 {
		return nil, batch, nil
	}
	evs, err := s.applySide(side)
	if err != nil {
		s.log.Error("delta_log_append", "err", err)
		return nil, batch, nil
	}
	return side, rest, evs
}

// sideRoom counts a commit's deferred index entries (see sideable), by
// conversation and by owner; the writer reuses its maps from commit to
// commit.
type sideRoom struct {
	conv, owner map[string]int
}

func (r *sideRoom) add(cid, owner string, n int) {
	if r.conv == nil {
		r.conv, r.owner = map[string]int{}, map[string]int{}
	}
	r.conv[cid] += n
	if owner != "" {
		r.owner[owner] += n
	}
}

// sideable reports whether every record of r is a text delta (isDelta: an
// answer's start too) alone whose
// owner the writer knows and whose index entries can wait (eventlog.RunIndex), and
// counts them in room if so.
func (s *Store) sideable(r *request, room *sideRoom) bool {
	if !isLight(r.Recs) {
		return false
	}
	var mine sideRoom // r's own, until r is taken; only if r has several records
	for _, rec := range r.Recs {
		cid := rec.Event.ConversationID
		if !isDelta(rec) || cid == "" || !textOK(rec.Event.ID) || len(rec.Event.ID) > 0xffff || len(cid) > 0xffff {
			return false
		}
		owner, ok := s.owners[cid]
		if !ok {
			return false
		}
		if s.convIx.Waiting(cid)+room.conv[cid]+mine.conv[cid] >= eventlog.PendingMax-2 {
			return false
		}
		if owner != "" && s.ownerIx.Waiting(owner)+room.owner[owner]+mine.owner[owner] >= eventlog.PendingMax-2 {
			return false
		}
		if len(r.Recs) > 1 {
			mine.add(cid, owner, 1)
		}
	}
	for _, rec := range r.Recs {
		cid := rec.Event.ConversationID
		room.add(cid, s.owners[cid], 1)
	}
	return true
}

// applySide commits batch to the delta log (eventlog.Writer.CommitDeltas:
// the seqs, the append, the deferred index entries): here each record is
// checked, dated and encoded, with the owner the writer knows. An event
// repeated within the batch gets the seq of its first. On an error nothing
// is committed and the seqs are cleared.
func (s *Store) applySide(batch []*request) ([]agent.Encoded, error) {
	now := s.now()
	evs, err := s.wr.CommitDeltas(s.side, batch, s.convIx, s.ownerIx, func(rec *agent.Record, seq int64) (eventlog.Delta, agent.Encoded, error) {
		ev := &rec.Event
		if err := checkRecordText(rec); err != nil {
			return eventlog.Delta{}, agent.Encoded{}, err
		}
		if ev.Date.IsZero() {
			ev.Date = now
		}
		setSeq(rec, seq)
		enc, err := agent.EncodeRef(ev)
		if err != nil {
			return eventlog.Delta{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "event %s: %v", ev.ID, err)
		}
		owner := s.owners[ev.ConversationID]
		ev.Owner, enc.Owner = owner, owner
		return eventlog.Delta{Seq: seq, Created: now, Conv: ev.ConversationID, Owner: owner, ID: ev.ID, JSON: enc.JSON}, enc, nil
	})
	if err != nil {
		return nil, err
	}
	s.durable.Store(s.wr.Last())
	return evs, nil
}
