package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// Events returns stored events with seq > q.After in seq order, at most
// q.Limit (≤ 0: no limit); a page with a Limit also ends after the event
// whose stored JSON reaches Options.PageBytes, so it may be shorter than
// Limit before the end of the log (an empty page is the end). ConversationID keeps that conversation's
// KindConversation events; AgentOnly keeps KindAgent events. It decodes
// each event: the hot paths (replay to subscribers, replay pages) read
// EncodedEvents instead, which decodes nothing.
func (s *Store) Events(ctx context.Context, q agent.EventQuery) ([]agent.AllEvent, error) {
	encs, err := s.EncodedEvents(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]agent.AllEvent, len(encs))
	for i, e := range encs {
		if err := json.Unmarshal(e.JSON, &out[i]); err != nil {
			return nil, fmt.Errorf("store: events after %d: decode seq %d: %w", q.After, e.Seq, err)
		}
	}
	return out, nil
}

// EncodedEvents is Events as the stored bytes, passed through undecoded:
// each carries its seq, kind and conversation from its row, and only its
// inner event's type is read (see agent.StoredEvent). A query of one
// conversation or of agent events reads neither column it already knows,
// and one of a conversation takes each event's id from its payload (every
// column costs the driver a copy and a type lookup per row: a replay of
// 100,000 events is that many rows).
func (s *Store) EncodedEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	if !textOK(q.ConversationID) {
		return nil, nil // no stored conversation has that id
	}
	if !textOK(q.Owner) {
		return nil, nil // no user has that id
	}
	if q.Owner == "" || !slices.ContainsFunc(q.Projects, textOK) {
		q.Projects = nil
	}
	if len(q.Projects) > 0 && q.ConversationID != "" {
		// One conversation: all of its events when it is in a project the
		// member reaches (the project rule), else the owner rule's.
		if c, err := s.Conversation(ctx, q.ConversationID); err == nil && c.Project != "" && slices.Contains(q.Projects, c.Project) {
			q.Owner = ""
		}
		q.Projects = nil
	}
	var b strings.Builder
	args := []any{q.After}
	known := eventKnown{owner: q.Owner}
	switch {
	case q.ConversationID != "" && s.plain:
		return s.plainConversationEvents(ctx, q) // mode.go
	case q.ConversationID != "":
		// By event_conversation, then the pending entries (convindex.go).
		return s.conversationEvents(ctx, q)
	case q.Owner != "" && s.ownerIx != nil && len(q.Projects) == 0:
		// A member's replay, on SQLite: by event_owner, the same way.
		return s.ownerEvents(ctx, q)
	case q.AgentOnly:
		b.WriteString("SELECT seq, id, conversation_id, payload FROM agent_event WHERE seq > ? AND type = ?")
		args = append(args, agent.KindAgent)
		known = eventKnown{kind: agent.KindAgent, owner: q.Owner}
	case q.Owner != "" && len(q.Projects) == 0:
		b.WriteString("SELECT seq, id, type, conversation_id, payload FROM agent_event WHERE seq > ?")
	case len(q.Projects) > 0:
		// A member of projects: each event's owner is read (not theirs all).
		b.WriteString("SELECT " + encodedColumns + " FROM agent_event WHERE seq > ?")
		known = eventKnown{}
	default:
		b.WriteString("SELECT " + encodedColumns + " FROM agent_event WHERE seq > ?")
	}
	var reached map[string]bool // the conversations of q.Projects
	switch {
	case len(q.Projects) > 0:
		// The owner rule or the project rule (agent/access.go): their
		// events, and those of the conversations in their projects now.
		in := strings.TrimSuffix(strings.Repeat("?, ", len(q.Projects)), ", ")
		b.WriteString(" AND (owner = ? OR conversation_id IN (SELECT id FROM conversation WHERE project IN (" + in + ")))")
		args = append(args, q.Owner)
		pargs := make([]any, len(q.Projects))
		for i, p := range q.Projects {
			pargs[i] = p
		}
		args = append(args, pargs...)
		if s.side != nil && !q.AgentOnly {
			var ids []string
			if err := s.r.WithContext(ctx).Raw("SELECT id FROM conversation WHERE project IN ("+in+")", pargs...).Scan(&ids).Error; err != nil {
				return nil, fmt.Errorf("store: events after %d: %w", q.After, err)
			}
			reached = make(map[string]bool, len(ids))
			for _, id := range ids {
				reached[id] = true
			}
		}
	case q.Owner != "":
		// A member's replay on PostgreSQL and in plain mode: their events
		// only, by idx_event_owner_seq (owner, seq), never read and dropped.
		b.WriteString(" AND owner = ?")
		args = append(args, q.Owner)
	}
	b.WriteString(" ORDER BY seq")
	if q.Limit > 0 {
		b.WriteString(" LIMIT ?")
		args = append(args, q.Limit)
	}
	maxBytes := 0
	if q.Limit > 0 {
		maxBytes = s.pageB
	}
	through := s.durable.Load() // before either read (deltalog.go)
	out, err := s.scanEvents(ctx, known, max(q.Limit, 0), maxBytes, b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store: events after %d: %w", q.After, err)
	}
	if s.side == nil || q.AgentOnly {
		return out, nil
	}
	if reached != nil {
		// The delta log is read whole and kept by the same rule; where
		// the read ended is of what it read, before that.
		deltas, err := s.side.Read(q.After, through, q.Limit, "")
		if err != nil {
			return nil, fmt.Errorf("store: events after %d: %w", q.After, err)
		}
		end := min(eventlog.ReadEnd(out, q.Limit, maxBytes, through), eventlog.ReadEnd(deltas, q.Limit, 0, through))
		kept := deltas[:0]
		for _, d := range deltas {
			if d.Owner == q.Owner || reached[d.ConversationID] {
				kept = append(kept, d)
			}
		}
		return eventlog.Page(eventlog.Merge(out, kept, end), q.Limit, maxBytes), nil
	}
	deltas, err := s.side.Read(q.After, through, q.Limit, q.Owner)
	if err != nil {
		return nil, fmt.Errorf("store: events after %d: %w", q.After, err)
	}
	end := min(eventlog.ReadEnd(out, q.Limit, maxBytes, through), eventlog.ReadEnd(deltas, q.Limit, 0, through))
	return eventlog.Page(eventlog.Merge(out, deltas, end), q.Limit, maxBytes), nil
}

// conversationEvents is EncodedEvents of one conversation: the seqs that
// event_conversation holds for it, then those whose entries are pending
// (convindex.go), and their rows read by seq.
func (s *Store) conversationEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	if q.AgentOnly {
		return nil, nil // nothing is both a conversation's event and an agent event
	}
	r := indexedRead{key: convRuns, ix: s.convIx, id: q.ConversationID, cols: "seq, payload",
		known:  eventKnown{kind: agent.KindConversation, conversationID: q.ConversationID, both: true, owner: q.Owner},
		filter: " AND type = ?", fargs: []any{agent.KindConversation}}
	if q.Owner != "" {
		r.filter += " AND owner = ?"
		r.fargs = append(r.fargs, q.Owner)
	}
	return s.indexedEvents(ctx, q, r)
}

// ownerEvents is EncodedEvents of one owner's events (a member's replay of
// the whole log) on SQLite: by event_owner, as conversationEvents.
func (s *Store) ownerEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	r := indexedRead{key: ownerRuns, ix: s.ownerIx, id: q.Owner, cols: "seq, id, type, conversation_id, payload", known: eventKnown{owner: q.Owner}}
	if q.AgentOnly {
		r.cols, r.known.kind = "seq, id, conversation_id, payload", agent.KindAgent
		r.filter, r.fargs = " AND type = ?", []any{agent.KindAgent}
	}
	return s.indexedEvents(ctx, q, r)
}

// indexedRead is a read of the events of one key of a runIndex.
type indexedRead struct {
	key    *runIndex
	ix     *eventlog.RunIndex // nil on PostgreSQL: nothing is pending
	id     string             // the conversation or the owner
	cols   string             // the columns scanEvents reads, by known
	known  eventKnown
	filter string // more conditions on the rows, with fargs
	fargs  []any
}

// indexedEvents reads r's events after q.After, at most q.Limit (and a
// page's bytes) of them, by r.key's run index (eventlog.ReadByIndex): the
// SQL of its reads is here, a dense stretch read as a range of agent_event
// (rangeFrom), a sparse one by its seqs.
func (s *Store) indexedEvents(ctx context.Context, q agent.EventQuery, r indexedRead) ([]agent.Encoded, error) {
	read := eventlog.IndexRead{Index: r.ix, Key: r.id, After: q.After, Limit: q.Limit, Owner: q.Owner,
		Seqs: func(after int64, want int) ([]int64, bool, error) { return s.indexSeqs(ctx, r.key, r.id, after, want) },
		Rows: func(chunk []int64, dense bool, limit, budget int) ([]agent.Encoded, error) {
			query, args := "SELECT "+r.cols+r.key.rangeFrom, append([]any{chunk[0], chunk[len(chunk)-1], r.id}, r.fargs...)
			if !dense {
				query, args = "SELECT "+r.cols+eventsBySeq+"("+seqList(chunk)+")", r.fargs
			}
			lim, args := withLimit(limit, args)
			return s.scanEvents(ctx, r.known, len(chunk), budget, query+r.filter+" ORDER BY seq"+lim, args...)
		},
	}
	if q.Limit > 0 {
		read.MaxBytes = s.pageB
	}
	if s.side != nil && r.known.kind != agent.KindAgent { // the delta log holds conversation events alone: text deltas, answers' starts (deltalog.go)
		read.Side = s.side
	}
	out, err := eventlog.ReadByIndex(read)
	if err != nil {
		return nil, fmt.Errorf("store: events of %s after %d: %w", r.id, q.After, err)
	}
	return out, nil
}

// withLimit is a query's " LIMIT ?" with n appended to its args, or ""
// and args for n ≤ 0. The limit is bound, not written into the text: a
// read's text stays the same for every limit, so a connection compiles it
// once and keeps it (sqlitedrv's cache, by text). args is never written:
// a read's arguments may be shared (indexedRead.fargs, for every page).
func withLimit(n int, args []any) (string, []any) {
	if n <= 0 {
		return "", args
	}
	return " LIMIT ?", append(slices.Clip(args), n)
}

// encodedColumns are what scanEvents reads, in its order, when the query
// knows neither the kind nor the conversation.
const encodedColumns = "seq, id, type, conversation_id, owner, payload"

// eventKnown is what a query of events fixes, so its rows leave it out:
// the kind (the type column), and with both also the conversation; with
// owner set, the owner (else it is read only with encodedColumns).
type eventKnown struct {
	kind, conversationID string
	both                 bool
	owner                string
}

// stored returns at most limit stored events with after < seq < before, in
// seq order.
func (s *Store) stored(ctx context.Context, after, before int64, limit int) ([]agent.Encoded, error) {
	s.logReads.Add(1)
	through := s.durable.Load()
	evs, err := s.scanEvents(ctx, eventKnown{}, limit, 0, "SELECT "+encodedColumns+" FROM agent_event WHERE seq > ? AND seq < ? ORDER BY seq LIMIT ?", after, before, limit)
	if err != nil || s.side == nil {
		return evs, err
	}
	deltas, err := s.side.Read(after, min(through, before-1), limit, "")
	if err != nil {
		return nil, err
	}
	end := min(eventlog.ReadEnd(evs, limit, 0, through), eventlog.ReadEnd(deltas, limit, 0, through))
	return eventlog.Page(eventlog.Merge(evs, deltas, end), limit, 0), nil
}

// scanEvents runs query, which selects seq, the id unless known.both, the
// type unless known.kind is set, the conversation_id unless known.both,
// then the payload, and wraps each row's payload without decoding it;
// size is a capacity hint. With maxBytes > 0 it stops after the row whose
// payload brings the total to maxBytes.
func (s *Store) scanEvents(ctx context.Context, known eventKnown, size, maxBytes int, query string, args ...any) ([]agent.Encoded, error) {
	if known.both && s.ev != nil {
		return s.scanPayloads(ctx, known, size, maxBytes, query, args...)
	}
	rows, err := s.r.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out     = make([]agent.Encoded, 0, size)
		seq     int64
		id      string
		kind    = known.kind
		conv    = sql.NullString{String: known.conversationID}
		payload string
		total   int
		owner   = known.owner
		dest    = []any{&seq, &id, &kind, &conv, &payload}
	)
	switch {
	case known.kind == "" && known.owner == "" && !known.both:
		dest = []any{&seq, &id, &kind, &conv, &owner, &payload} // encodedColumns
	case known.both:
		dest = []any{&seq, &payload}
	case known.kind != "":
		dest = []any{&seq, &id, &conv, &payload}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		// The driver made a fresh string of the payload for this row; its
		// bytes are the event's JSON, which nothing writes to (Encoded's
		// JSON is read-only): no second copy.
		raw := viewBytes(payload)
		if known.both {
			if id, err = payloadID(raw); err != nil {
				return nil, fmt.Errorf("seq %d: %w", seq, err)
			}
		}
		e := agent.StoredEvent(seq, id, kind, conv.String, raw)
		e.Owner = owner
		out = append(out, e)
		if total += len(raw); maxBytes > 0 && total >= maxBytes {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// idKey precedes the id in a stored event's JSON: the codec writes the
// type (a kind, no quote in it), the seq, then the id.
var idKey = []byte(`,"id":"`)

// payloadID reads the id of a stored event from its JSON, as a view of
// b's bytes (which must never change: they are an Encoded's JSON).
func payloadID(b []byte) (string, error) {
	if i := bytes.Index(b, idKey); i >= 0 {
		rest := b[i+len(idKey):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
			return viewString(rest[:j]), nil
		}
	}
	var ev struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return "", fmt.Errorf("stored event id: %w", err)
	}
	return ev.ID, nil
}

// EventSeq returns the seq of the event with that id, or agent.ErrNotFound
// (also once it was pruned).
func (s *Store) EventSeq(ctx context.Context, id string) (int64, error) {
	if !textOK(id) {
		return 0, fmt.Errorf("store: event seq: %w", missing("event", id))
	}
	var row eventRow
	if err := s.r.WithContext(ctx).Select("seq").Take(&row, "id = ?", id).Error; err != nil {
		if s.side != nil && errors.Is(err, gorm.ErrRecordNotFound) {
			if seq, ok, err := s.side.SeqOf(id); err != nil || ok {
				return seq, err
			}
		}
		return 0, fmt.Errorf("store: event seq: %w", notFound(err, "event", id))
	}
	return row.Seq, nil
}

// Bounds returns the seq through which events were pruned (a cursor below it
// has lost events) and the highest committed seq.
func (s *Store) Bounds(ctx context.Context) (pruned, head int64, err error) {
	if b, ok := s.cache.bounds(s.Version()); ok {
		return b[0], b[1], nil
	}
	v := s.Version() // before the read: a commit after it moves it
	pruned, head, err = s.bounds(s.r.WithContext(ctx))
	if err != nil {
		return 0, 0, fmt.Errorf("store: %w", err)
	}
	head = max(pruned, head)
	s.cache.putBounds(v, [2]int64{pruned, head})
	return pruned, head, nil
}

// Prune deletes the log's oldest events, those before the first one
// created at or after t, records the highest deleted seq as
// pruned_through, and returns how many it deleted. Messages are kept.
// The engine prunes (eventlog.Writer.Prune: a prefix of the log, never a
// hole, found without an index of created_at; docs/ARCHITECTURE.md), with
// the rows of the conversation index and, on SQLite, the owner index.
func (s *Store) Prune(ctx context.Context, before time.Time) (int64, error) {
	p := eventlog.Pruned{Side: s.side, Runs: []*eventlog.Runs{convRuns.Runs}, Indexes: []*eventlog.RunIndex{s.convIx, s.ownerIx}}
	if !s.postgres { // PostgreSQL has no event_owner
		p.Runs = append(p.Runs, ownerRuns.Runs)
	}
	n, err := s.wr.Prune(ctx, before.UTC(), p)
	s.version.Add(1) // pruned_through may have moved (see Bounds)
	if err != nil {
		return 0, fmt.Errorf("store: prune: %w", err)
	}
	return n, nil
}

// ConversationPruned returns the seq through which events of conversation
// id may have been pruned: a cursor on that conversation's stream below it
// has lost some. It is judged by the conversation's own oldest event, not
// the whole log's: while its created event is kept, nothing of it was
// pruned (0); otherwise events before its oldest kept one may be gone. A
// conversation with no kept event gets the log's bound.
func (s *Store) ConversationPruned(ctx context.Context, id string) (int64, error) {
	db := s.r.WithContext(ctx)
	pruned, _, err := bounds(db)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	if pruned == 0 || !textOK(id) {
		return pruned, nil
	}
	// Its first row of the index, else its pending entries (convindex.go),
	// and the oldest of their events that is kept.
	pending := s.convIx.PendingAfter(id, 0)
	seqs, _, err := conversationSeqs(db, s.plain, id, 0, 1)
	if err != nil {
		return 0, fmt.Errorf("store: oldest event of %s: %w", id, err)
	}
	if len(seqs) == 0 {
		seqs = pending
	}
	var first []eventRow
	if len(seqs) > 0 {
		if err := db.Raw("SELECT seq, type, payload FROM agent_event WHERE seq IN (" + seqList(seqs) + ") ORDER BY seq LIMIT 1").Scan(&first).Error; err != nil {
			return 0, fmt.Errorf("store: oldest event of %s: %w", id, err)
		}
	}
	if s.side != nil && len(seqs) > 0 {
		// Or a text delta of the delta log's, older.
		deltas, err := s.side.BySeqs(seqs, "")
		if err != nil {
			return 0, fmt.Errorf("store: oldest event of %s: %w", id, err)
		}
		if len(deltas) > 0 && (len(first) == 0 || deltas[0].Seq < first[0].Seq) {
			return min(pruned, deltas[0].Seq-1), nil
		}
	}
	if len(first) == 0 {
		return pruned, nil
	}
	if first[0].Type == agent.KindAgent {
		var w struct {
			Event struct {
				Type string `json:"type"`
			} `json:"event"`
		}
		if json.Unmarshal([]byte(first[0].Payload), &w) == nil && w.Event.Type == agent.AgentCreated {
			return 0, nil
		}
	}
	return min(pruned, first[0].Seq-1), nil
}

// CursorAt turns an instant into an event cursor: the seq just before the
// first stored event created at or after t (the head when there is none),
// so that resuming after it starts at t.
//
// created_at has no index (see Prune): it takes the log's dates as rising
// with seq, as the writer stamps them, and bisects the seqs, one primary
// key lookup per step. Were the clock to step back, the cursor falls on
// one of the events where the dates cross t.
func (s *Store) CursorAt(ctx context.Context, t time.Time) (int64, error) {
	db := s.r.WithContext(ctx)
	t = t.UTC()
	pruned, head, err := s.Bounds(ctx)
	if err != nil {
		return 0, err
	}
	// The first stored event at or after seq, its seq and date.
	at := func(seq int64) (int64, time.Time, bool, error) {
		var row []eventRow
		if err := db.Select("seq", "created_at").Where("seq >= ?", seq).Order("seq").Limit(1).Find(&row).Error; err != nil {
			return 0, time.Time{}, false, fmt.Errorf("store: cursor at %s: %w", t, err)
		}
		if s.side != nil {
			// Or a text delta of the delta log's, before it.
			dseq, date, ok, err := s.side.FirstFrom(seq)
			if err != nil {
				return 0, time.Time{}, false, fmt.Errorf("store: cursor at %s: %w", t, err)
			}
			if ok && (len(row) == 0 || dseq < row[0].Seq) {
				return dseq, date, true, nil
			}
		}
		if len(row) == 0 {
			return 0, time.Time{}, false, nil
		}
		return row[0].Seq, row[0].CreatedAt, true, nil
	}
	// Invariant: every stored event below lo is older than t; the first
	// stored event at or above hi, if any, is not.
	lo, hi := pruned+1, head+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		seq, date, ok, err := at(mid)
		switch {
		case err != nil:
			return 0, err
		case !ok || seq >= hi:
			hi = mid // nothing stored in [mid, hi)
		case date.Before(t):
			lo = seq + 1
		default:
			hi = seq
		}
	}
	seq, _, ok, err := at(lo)
	if err != nil {
		return 0, err
	}
	if !ok {
		return head, nil
	}
	return seq - 1, nil
}

// MessageCursorAt is CursorAt for a conversation's messages: the seq just
// before its first message dated at or after t.
func (s *Store) MessageCursorAt(ctx context.Context, conversationID string, t time.Time) (int64, error) {
	if !textOK(conversationID) {
		return 0, fmt.Errorf("store: message cursor: %w", missing("conversation", conversationID))
	}
	db := s.r.WithContext(ctx)
	var first sql.NullInt64
	if err := db.Model(&messageRow{}).Where("conversation_id = ? AND date >= ?", conversationID, t.UTC()).Select("MIN(seq)").Scan(&first).Error; err != nil {
		return 0, fmt.Errorf("store: message cursor at %s: %w", t, err)
	}
	if first.Valid {
		return first.Int64 - 1, nil
	}
	_, head, err := s.Bounds(ctx)
	return head, err
}
