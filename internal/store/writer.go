package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// insertChunk is how many rows one gorm CreateInBatches statement carries
// (working memory, search documents): a few parameters each stays far under
// SQLite's and PostgreSQL's limits.
const insertChunk = 256

// idChunk is how many ids one "id IN (…)" lookup carries.
const idChunk = 500

// lockKey is the one-key PostgreSQL advisory lock of one kind of work in
// one store: advisory locks are per database, so a key names its schema's
// store (by the epoch, or the schema's name before the epoch exists), and
// stores in other schemas of the same database never wait on each other.
func lockKey(kind, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentik " + kind + " "))
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// migrateLock is the advisory lock under which an instance creates or
// updates the schema it is in.
func migrateLock(schema string) int64 { return lockKey("migrate", schema) }

// seqLock is the advisory lock every append transaction of the store with
// that epoch takes first. It serializes the appenders of all its
// instances, so a seq becomes visible only after every lower seq did: a
// reader that saw seq n never later finds a new event below n.
func seqLock(epoch string) int64 { return lockKey("seq", epoch) }

// request is one Append call waiting for the writer (eventlog.Writer).
type request = eventlog.Request[*agent.Record]

// Append commits recs in order, group-committed with concurrent Appends. It
// assigns each new event its seq (and a message event's Message its Seq),
// hands the committed events to Options.Publish in seq order, and returns
// once they are durable. An event whose ID is already stored is skipped and
// gets its stored seq. If any record of the call fails, none of them is
// written. ctx bounds only the wait for a place in the queue: once queued,
// the call waits for its outcome, which is then the truth about the data.
func (s *Store) Append(ctx context.Context, recs ...*agent.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for i, rec := range recs {
		if rec == nil {
			return agent.Errorf(agent.CodeBadRequest, "store: append: record %d is nil", i)
		}
	}
	if s.temp != nil {
		return s.appendTemp(ctx, recs) // temp.go
	}
	err := s.wr.Append(ctx, recs)
	if errors.Is(err, eventlog.ErrClosed) {
		return agent.Errorf(agent.CodeUnavailable, "store: append: the store is closed")
	}
	if err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	return nil
}

// The writer's transaction (eventlog.Writer: the group commit, the seqs,
// the events table's INSERT, the retries, the split of a failed batch and
// the ordered publication) runs the store's hooks below: what each record
// writes in its rows, in the same transaction.

// eventTable is agent_event, as the writer's engine knows it.
var eventTable = eventlog.Table{
	Name:    "agent_event",
	Columns: [7]string{"seq", "id", "conversation_id", "created_at", "type", "payload", "owner"},
	Runs:    "event_conversation", // PostgreSQL: its entries are written with the events (convindex.go)
	Meta:    "meta",
	Pruned:  metaPrunedThrough,
}

// writerConfig is the engine's configuration of the writer of s: its
// database and, on PostgreSQL, the seq lock and the channel its commits
// are notified on (the epoch names both). head is the highest seq ever
// committed.
func (s *Store) writerConfig(head int64) eventlog.Config {
	return eventlog.Config{
		DB: s.w, Ctx: s.ctx, Log: s.log, Table: eventTable, Retry: s.retryWait, Head: head,
		NoLog:    s.temp != nil, // a temp database logs no event (temp.go)
		Postgres: s.postgres, SeqLock: s.seqLock, Channel: s.channel,
		Notice: func(seq int64, evs []agent.Encoded) string { return notice(seq, s.instance, evs) },
	}
}

// writerHooks are what the store does in and around the writer's
// transaction (eventlog.Hooks).
func (s *Store) writerHooks() eventlog.Hooks[*agent.Record] {
	return eventlog.Hooks[*agent.Record]{
		Light:   isLight,
		ID:      func(rec *agent.Record) (string, bool) { return rec.Event.ID, textOK(rec.Event.ID) }, // any other is refused by prepare
		Stored:  func(rec *agent.Record, seq int64) { setSeq(rec, s.eventSeq(seq)) },
		Seq:     func(rec *agent.Record) int64 { return rec.Event.Seq },
		Unseq:   unseq,
		Begin:   s.beginTx,
		Apply:   s.applyRecord,
		Applied: s.appliedRequest,
		Finish:  s.finishTx,
		End:     s.endTx,
		Side:    s.commitSide, // deltalog.go
		// The commit's events, after any that other instances committed
		// below them (see catchUp). If they cannot be read, evs are not
		// published now either (that would break seq order): the next
		// commit, or the listener on the next notification or after
		// eventlog.ListenIdle, publishes them, late but in order.
		OnCommit: func(upTo int64, evs []agent.Encoded) error { return s.catchUp(s.ctx, upTo, evs) },
		Committed: func() {
			s.indexBodies() // searchlater.go
			if s.ckpt != nil {
				s.ckpt.Committed()
			}
		},
	}
}

// unseq clears the seqs a failed transaction set on rec.
func unseq(rec *agent.Record) {
	rec.Event.Seq = 0
	if e := rec.Event.Event; e != nil && e.Message != nil {
		e.Message.Seq = 0
	}
}

// txState is what one attempt of the writer's transaction knows; the
// writer's goroutine owns it (a temp database's Append, under t.mu).
type txState struct {
	now    time.Time
	facts  txFacts         // what this attempt wrote: fresh per attempt
	cx, ox *eventlog.RunTx // the conversation and owner index entries (eventlog/runindex.go)
	doc    int64           // the highest search_doc id it inserted (SQLite; searchlater.go)
}

// beginTx starts an attempt of the transaction of batch.
func (s *Store) beginTx(_ *gorm.DB, batch []*request) error {
	s.tx.now = s.now()
	s.sideRedact = s.sideRedact[:0]
	s.dropOwners() // an earlier attempt's (owner.go)
	s.tx.cx = s.convIx.Begin()
	s.tx.ox = s.ownerIx.Begin()
	s.tx.facts = txFacts{}
	s.tx.doc = 0
	if s.temp != nil {
		s.temp.seed(s.tx.facts, batch) // and what earlier ones did (temp.go)
	}
	return nil
}

// applyRecord writes rec's rows as the writer's seq-th event, and returns
// its agent_event row and its encoded event (publish false: a temp
// database's quiet record, never published).
func (s *Store) applyRecord(tx *gorm.DB, rec *agent.Record, seq int64) (eventlog.Row, agent.Encoded, bool, error) {
	now, facts, cx, ox := s.tx.now, s.tx.facts, s.tx.cx, s.tx.ox
	fail := func(err error) (eventlog.Row, agent.Encoded, bool, error) {
		return eventlog.Row{}, agent.Encoded{}, false, err
	}
	if !deferrable(rec) {
		if err := facts.flush(tx); err != nil {
			return fail(err)
		}
	}
	if err := applyQueue(tx, rec); err != nil {
		return fail(err)
	}
	if err := applyApproval(tx, rec, s.instance); err != nil {
		return fail(err)
	}
	if err := applyElicit(tx, rec); err != nil { // elicit.go
		return fail(err)
	}
	quiet := s.temp != nil && rec.Quiet // applied, never published (temp.go)
	// A message that follows the head is encoded once applyRows has named
	// its parent.
	followed := needsParent(rec)
	row, enc, err := s.prepare(rec, seq, now, quiet || followed)
	if err != nil {
		return fail(err)
	}
	if row.ConversationID != nil && s.temp == nil { // before a delete's redaction reads the index
		if err := cx.Add(rawCtx(tx), engineDB(tx), *row.ConversationID, seq, isDelta(rec)); err != nil {
			return fail(fmt.Errorf("conversation index: %w", err))
		}
	}
	if err := s.own(tx, rec, &row, &enc); err != nil { // owner.go; before a delete
		return fail(err)
	}
	if row.Owner != "" && s.temp == nil {
		if err := ox.Add(rawCtx(tx), engineDB(tx), row.Owner, seq, isDelta(rec)); err != nil {
			return fail(fmt.Errorf("owner index: %w", err))
		}
	}
	if err := s.applyRows(tx, rec, seq, now, facts); err != nil {
		return fail(err)
	}
	if followed && !quiet {
		if row, enc, err = s.encode(rec, row); err != nil {
			return fail(err)
		}
		enc.Owner = row.Owner
	}
	return eventlog.Row{Seq: row.Seq, ID: row.ID, Key: row.ConversationID, Created: row.CreatedAt, Type: row.Type, Payload: row.Payload, Owner: row.Owner}, enc, !quiet, nil
}

// appliedRequest follows the records of one request: the conversation
// rows their messages deferred, and an import's dates.
func (s *Store) appliedRequest(tx *gorm.DB, recs []*agent.Record) error {
	if err := s.tx.facts.flush(tx); err != nil {
		return err
	}
	return keepImportedDate(tx, recs)
}

// finishTx writes the index entries the transaction holds, through last.
func (s *Store) finishTx(tx *gorm.DB, last int64) error {
	if err := s.tx.cx.Finish(rawCtx(tx), engineDB(tx), last); err != nil {
		return err
	}
	return s.tx.ox.Finish(rawCtx(tx), engineDB(tx), last)
}

// endTx closes an attempt: what it learnt is kept if it committed.
func (s *Store) endTx(committed bool, last int64) {
	if !committed {
		s.dropOwners()
		return
	}
	if s.temp != nil {
		s.temp.facts = s.tx.facts // kept only when this commits
	}
	s.keepOwners()
	s.tx.cx.Done()
	s.tx.ox.Done()
	if s.bodies != nil && s.tx.doc > 0 {
		s.bodies.last.Store(max(s.bodies.last.Load(), s.tx.doc))
	}
	if s.side != nil {
		s.durable.Store(last)
		if len(s.sideRedact) > 0 {
			// A delete's text deltas in the delta log, now that it is
			// committed (a crash before this: redactOrphans at open).
			if err := s.side.Redact(s.sideRedact); err != nil {
				s.log.Error("delta_log_redact", "err", err)
			}
			s.sideRedact = s.sideRedact[:0]
		}
	}
}

func setSeq(rec *agent.Record, seq int64) {
	rec.Event.Seq = seq
	if e := rec.Event.Event; e != nil && e.Type == agent.EventMessage && e.Message != nil {
		e.Message.Seq = seq
	}
}

// eventSeq is the seq an event committed as the writer's seq-th says it
// has: seq itself, or 0 in a temp database, whose counter only orders its
// message rows (temp.go).
func (s *Store) eventSeq(seq int64) int64 {
	if s.temp != nil {
		return 0
	}
	return seq
}

// prepare checks rec, gives its event seq and defaults, and encodes it, once:
// the row stores those bytes and the writer publishes them. With later, it
// is not encoded: a quiet record (a temp database's, never published), or
// a message the writer encodes once it knows the parent it follows.
func (s *Store) prepare(rec *agent.Record, seq int64, now time.Time, later bool) (eventRow, agent.Encoded, error) {
	ev := &rec.Event
	if ev.ID == "" {
		return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "event without id")
	}
	if err := checkRecordText(rec); err != nil {
		return eventRow{}, agent.Encoded{}, err
	}
	switch ev.Kind {
	case agent.KindAgent:
		if ev.Agent == nil {
			return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "agent event %s without its event", ev.ID)
		}
		if ev.Agent.ConversationID == "" {
			ev.Agent.ConversationID = ev.ConversationID
		}
		ev.ConversationID = ev.Agent.ConversationID
	case agent.KindConversation:
		if ev.Event == nil {
			return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "conversation event %s without its event", ev.ID)
		}
		if ev.ConversationID == "" {
			return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "conversation event %s without conversation_id", ev.ID)
		}
		if ev.Event.Type == agent.EventMessage {
			m := ev.Event.Message
			if m == nil {
				return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "message event %s without its message", ev.ID)
			}
			if m.ID == "" {
				return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "message event %s: message without id", ev.ID)
			}
			if m.ConversationID == "" {
				m.ConversationID = ev.ConversationID
			}
			if m.ConversationID != ev.ConversationID {
				return eventRow{}, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "message %s: conversation_id %q differs from its event's %q", m.ID, m.ConversationID, ev.ConversationID)
			}
			if m.Date.IsZero() {
				m.Date = now
			}
		}
	}
	if ev.Date.IsZero() {
		ev.Date = now
	}
	setSeq(rec, s.eventSeq(seq))
	row := eventRow{Seq: seq, ID: ev.ID, CreatedAt: now, Type: ev.Kind}
	if ev.ConversationID != "" {
		id := ev.ConversationID
		row.ConversationID = &id
	}
	if later {
		return row, agent.Encoded{}, nil
	}
	return s.encode(rec, row)
}

// txFacts is what one writer transaction knows of the conversations it
// wrote: the head a next message follows and working memory's next index,
// so a run of messages (an import, a seeded history) does not read back
// what the transaction itself just wrote. A conversation is in it only
// once the transaction created it or wrote the fact; a rolled-back
// transaction's facts are dropped with it.
type txFacts map[string]*convFacts

type convFacts struct {
	head, next bool // which of the two is known
	headID     string
	nextIdx    int
	// counted messages were written whose conversation row is not
	// updated yet (see deferrable): its count grows by counted, its head
	// is headID and updated_at is at.
	counted int
	at      time.Time
}

// deferrable reports whether rec is a message alone (a seeded history's,
// an import's): its conversation's row changes only by the message's
// count, head and date, so a run of them updates it once (flush).
func deferrable(rec *agent.Record) bool {
	e := rec.Event.Event
	return rec.Event.Agent == nil && e != nil && e.Type == agent.EventMessage && e.Message != nil &&
		rec.Head == nil && rec.Turn == agent.TurnNone && !rec.ReplaceMemory && !rec.StaleMemory && rec.Context == nil &&
		rec.Enqueue == nil && rec.Dequeue == "" && rec.Wait == nil && rec.Decide == nil && rec.Resolve == "" && !rec.EndWait &&
		rec.Elicit == nil && rec.Source == "" && !rec.AutoTitle && rec.Conversation == nil
}

// flush writes the conversation rows' updates that deferred messages
// left, before any other statement of the transaction reads or writes
// those rows.
func (f txFacts) flush(tx *gorm.DB) error {
	for cid, c := range f {
		if c.counted == 0 {
			continue
		}
		cols := map[string]any{"updated_at": c.at, "message_count": gorm.Expr("message_count + ?", c.counted), "head": c.headID}
		c.counted = 0
		if err := updateConversation(tx, cid, cols); err != nil {
			return err
		}
	}
	return nil
}

func (f txFacts) of(cid string) *convFacts {
	c := f[cid]
	if c == nil {
		c = &convFacts{}
		f[cid] = c
	}
	return c
}

// applyRows writes the rows that belong to rec's event (see agent.Record),
// the writer's seq-th: a message row is ordered by seq.
func (s *Store) applyRows(tx *gorm.DB, rec *agent.Record, seq int64, now time.Time, facts txFacts) error {
	owner := s.instance
	ev := &rec.Event
	cid := ev.ConversationID
	if a := ev.Agent; a != nil {
		switch a.Type {
		case agent.AgentCreated:
			row := conversationRow{ID: cid, Title: a.Title, CreatedAt: now, UpdatedAt: now, Owner: agent.LocalUser}
			if rec.Source != "" {
				src := rec.Source
				row.Source = &src
			}
			if c := rec.Conversation; c != nil {
				if c.Temp && s.temp == nil {
					return agent.Errorf(agent.CodeBadRequest, "conversation %q is temporary: it is never stored", cid)
				}
				if c.ID != "" && c.ID != cid {
					return agent.Errorf(agent.CodeBadRequest, "created event %s: conversation id %q differs from the event's %q", ev.ID, c.ID, cid)
				}
				if c.Title != "" {
					row.Title = c.Title
				}
				row.Model, row.SystemPrompt, row.Params, row.UserTitled = c.Model, columnText(c.SystemPrompt), encodeParams(c.Params), c.UserTitled
				row.Agent, row.Pinned, row.Archived, row.Project = c.Agent, c.Pinned, c.Archived, c.Project
				row.Tools = encodeTools(c.Tools)
				if p := c.Parent; p != nil {
					row.ParentID, row.ParentCall = p.ConversationID, p.CallID
				}
				row.Owner = agent.OwnerOf(*c)
				if !c.CreatedAt.IsZero() {
					row.CreatedAt = c.CreatedAt.UTC().Truncate(time.Microsecond)
				}
				if !c.UpdatedAt.IsZero() {
					row.UpdatedAt = c.UpdatedAt.UTC().Truncate(time.Microsecond)
				}
			}
			if err := insertConversation(tx, &row); err != nil {
				if errors.Is(err, gorm.ErrDuplicatedKey) {
					return agent.Errorf(agent.CodeBadRequest, "conversation %q already exists, or its source was imported already", cid)
				}
				return fmt.Errorf("insert conversation %s: %w", cid, err)
			}
			if c := rec.Conversation; c != nil {
				api := c.APIRequest
				*c = s.conversation(row)
				c.APIRequest = c.APIRequest || api // not a column: the temp database keeps it (temp.go)
			}
			facts[cid] = &convFacts{head: true, next: true} // no message, no memory yet
		case agent.AgentRenamed:
			if err := rename(tx, cid, a.Title, rec.AutoTitle, now); err != nil {
				return fmt.Errorf("rename: %w", err)
			}
		case agent.AgentUpdated:
			if err := updateSettings(tx, cid, a.Settings(), now); err != nil {
				return fmt.Errorf("update conversation: %w", err)
			}
		case agent.AgentDeleted:
			if s.temp == nil { // a temp database logs no event to redact
				side, err := redactConversation(tx, s.plain, cid)
				if err != nil {
					return err
				}
				s.sideRedact = append(s.sideRedact, side...)
				if _, err := rawExec(tx, "DELETE FROM share WHERE conversation_id = ?", cid); err != nil { // its links go with it (share.go)
					return fmt.Errorf("delete the share links of %s: %w", cid, err)
				}
			}
			res, err := rawExec(tx, "DELETE FROM conversation WHERE id = ?", cid)
			if err != nil {
				return fmt.Errorf("delete conversation %s: %w", cid, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return fmt.Errorf("delete conversation %s: %w", cid, err)
			} else if n == 0 {
				return agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
			}
			delete(facts, cid)
		}
	}
	if rec.Head != nil {
		if err := moveHead(tx, cid, *rec.Head, rec.Turn == agent.TurnStart); err != nil {
			return err
		}
		f := facts.of(cid)
		f.head, f.headID = true, *rec.Head
	}
	// The conversation's columns this record changes, set by one UPDATE
	// at the end (the message's head, count and date, the memory's stale
	// mark, the context size, the turn's start or end).
	cols := map[string]any{}
	if e := ev.Event; e != nil && e.Type == agent.EventMessage {
		if err := insertMessage(tx, e.Message, seq, now, cols, facts.of(e.Message.ConversationID)); err != nil {
			return err
		}
	}
	if s.temp == nil { // temp conversations are not searched
		doc, err := indexRecord(tx, rec, s.bodies != nil)
		if err != nil {
			return err
		}
		s.tx.doc = max(s.tx.doc, doc)
	}
	if rec.ReplaceMemory {
		if _, err := rawExec(tx, "DELETE FROM working_memory WHERE conversation_id = ?", cid); err != nil {
			return fmt.Errorf("replace memory of %s: %w", cid, err)
		}
		f := facts.of(cid)
		f.next, f.nextIdx = true, 0
	}
	if len(rec.Memory) > 0 {
		if err := appendMemory(tx, cid, rec.Memory, facts.of(cid)); err != nil {
			return err
		}
	}
	if rec.ReplaceMemory || rec.StaleMemory {
		cols["memory_stale"] = rec.StaleMemory
	}
	if c := rec.Context; c != nil {
		cols["context_tokens"], cols["context_window"], cols["context_bytes"] = c.Tokens, c.Window, c.Bytes
	}
	switch rec.Turn {
	case agent.TurnStart:
		return startTurn(tx, cid, ev.Seq, now, owner, cols)
	case agent.TurnEnd:
		cols["running"], cols["running_since"], cols["turn_seq"], cols["turn_owner"] = false, nil, 0, ""
	}
	if len(cols) > 0 && deferrable(rec) {
		f := facts.of(cid) // insertMessage set its head
		f.counted++
		f.at = now
		return nil
	}
	if len(cols) > 0 {
		if err := updateConversation(tx, cid, cols); err != nil {
			return err
		}
	}
	return nil
}

// startTurn marks conversation cid running, in one UPDATE with the other
// columns its record changes (cols), or fails with busy when a turn runs
// in it already: on any instance, since every instance's appends are
// serialized (SQLite's one writer, PostgreSQL's seqLock), this is where
// two starts of one conversation meet, and only the first is written.
func startTurn(tx *gorm.DB, cid string, seq int64, now time.Time, owner string, cols map[string]any) error {
	cols["running"], cols["running_since"], cols["turn_seq"], cols["turn_owner"] = true, now, seq, owner
	n, err := updateConversationWhere(tx, cols, "id = ? AND running = ?", cid, false)
	if err != nil {
		return fmt.Errorf("start turn in %s: %w", shortID(cid), err)
	}
	if n == 1 {
		return nil
	}
	found, err := countConversation(tx, cid)
	if err != nil {
		return fmt.Errorf("start turn in %s: %w", shortID(cid), err)
	}
	if found == 0 {
		return agent.Errorf(agent.CodeNotFound, "conversation %q not found", shortID(cid))
	}
	return agent.ErrTurnRunning(cid)
}

// updateConversation sets columns of conversation id, or fails with not_found.
// keepImportedDate gives each conversation imported by recs (a created
// record with a Source) the updated_at it had where it came from, which
// the inserts of its messages moved to now.
func keepImportedDate(tx *gorm.DB, recs []*agent.Record) error {
	for _, rec := range recs {
		c := rec.Conversation
		if rec.Source == "" || c == nil || rec.Event.Agent == nil || rec.Event.Agent.Type != agent.AgentCreated || c.UpdatedAt.IsZero() {
			continue
		}
		if err := updateConversation(tx, c.ID, map[string]any{"updated_at": c.UpdatedAt.UTC().Truncate(time.Microsecond)}); err != nil {
			return err
		}
	}
	return nil
}

func updateConversation(tx *gorm.DB, id string, cols map[string]any) error {
	if len(cols) == 0 {
		res := tx.Model(&conversationRow{}).Where("id = ?", id).UpdateColumns(cols)
		if res.Error != nil {
			return fmt.Errorf("update conversation %s: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return agent.Errorf(agent.CodeNotFound, "conversation %q not found", shortID(id))
		}
		return nil
	}
	n, err := updateConversationWhere(tx, cols, "id = ?", id)
	if err != nil {
		return fmt.Errorf("update conversation %s: %w", id, err)
	}
	if n == 0 {
		return agent.Errorf(agent.CodeNotFound, "conversation %q not found", shortID(id))
	}
	return nil
}

// insertMessageSQL inserts one message row.
const insertMessageSQL = "INSERT INTO message (id, conversation_id, seq, type, date, client_id, payload, parent_id) VALUES (?,?,?,?,?,?,?,?)"

// insertMessage writes m's row, ordered by seq (m.Seq but in a temp
// database, whose messages say 0), and adds to cols what it changes in its
// conversation's row (its head, count and date).
func insertMessage(tx *gorm.DB, m *agent.Message, seq int64, now time.Time, cols map[string]any, f *convFacts) error {
	if m.ParentID == "" {
		p := f.headID
		if !f.head {
			var err error
			if p, err = head(tx, m.ConversationID); err != nil {
				return err
			}
		}
		m.ParentID = p
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return agent.Errorf(agent.CodeBadRequest, "message %s: %v", m.ID, err)
	}
	var clientID any // NULL
	if m.ClientID != "" {
		clientID = m.ClientID
	}
	if _, err := rawExec(tx, insertMessageSQL, m.ID, m.ConversationID, seq, m.Type,
		m.Date.UTC().Truncate(time.Microsecond), clientID, string(payload), m.ParentID); err != nil {
		switch {
		case errors.Is(err, gorm.ErrForeignKeyViolated):
			return agent.Errorf(agent.CodeNotFound, "conversation %q not found", m.ConversationID)
		case errors.Is(err, gorm.ErrDuplicatedKey) && m.ClientID != "":
			return agent.Errorf(agent.CodeBadRequest, "message %s: client_id %q is already used in conversation %s (or the message id is stored)", m.ID, m.ClientID, m.ConversationID)
		case errors.Is(err, gorm.ErrDuplicatedKey):
			return agent.Errorf(agent.CodeBadRequest, "message %s is already stored", m.ID)
		}
		return fmt.Errorf("insert message %s: %w", m.ID, err)
	}
	cols["updated_at"] = now
	cols["message_count"] = gorm.Expr("message_count + 1")
	cols["head"] = m.ID
	f.head, f.headID = true, m.ID
	return nil
}

// nextMemorySQL reads the next working-memory index of a conversation.
const nextMemorySQL = "SELECT COALESCE(MAX(order_idx) + 1, 0) FROM working_memory WHERE conversation_id = ?"

func appendMemory(tx *gorm.DB, cid string, mem []agent.ModelMessage, f *convFacts) error {
	next := f.nextIdx
	if !f.next {
		if err := rawRow(tx, nextMemorySQL, cid).Scan(&next); err != nil {
			return fmt.Errorf("memory of %s: %w", cid, err)
		}
	}
	args := make([]any, 0, 3*min(len(mem), insertChunk))
	for len(mem) > 0 {
		chunk := mem[:min(insertChunk, len(mem))]
		mem = mem[len(chunk):]
		args = args[:0]
		for _, m := range chunk {
			b, err := json.Marshal(m)
			if err != nil {
				return agent.Errorf(agent.CodeBadRequest, "memory of %s: %v", cid, err)
			}
			args = append(args, cid, next, string(b))
			next++
		}
		if _, err := rawExec(tx, memoryInsertText(len(chunk)), args...); err != nil {
			if errors.Is(err, gorm.ErrForeignKeyViolated) {
				return agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
			}
			return fmt.Errorf("append memory of %s: %w", cid, err)
		}
	}
	f.next, f.nextIdx = true, next
	return nil
}

// memoryTexts[n] is the INSERT of n working-memory rows (memoryInsertText).
var memoryTexts [insertChunk + 1]atomic.Pointer[string]

func memoryInsertText(n int) string {
	if q := memoryTexts[n].Load(); q != nil {
		return *q
	}
	var q strings.Builder
	q.WriteString("INSERT INTO working_memory (conversation_id, order_idx, payload) VALUES ")
	for i := range n {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?)")
	}
	text := q.String()
	memoryTexts[n].Store(&text)
	return text
}

// bounds reads the pruned-through seq and the highest stored seq of
// agent_event.
func bounds(db *gorm.DB) (pruned, head int64, err error) { return eventTable.Bounds(db) }

// headSeq is the highest seq ever committed, pruned or not.
func (s *Store) headSeq(db *gorm.DB) (int64, error) {
	pruned, head, err := s.bounds(db)
	return max(pruned, head), err
}

// bounds is bounds of the whole log: agent_event's and the delta log's.
func (s *Store) bounds(db *gorm.DB) (pruned, head int64, err error) {
	pruned, head, err = bounds(db)
	if s.side != nil {
		head = max(head, s.side.Head())
	}
	return pruned, head, err
}
