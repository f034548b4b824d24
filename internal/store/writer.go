package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
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

// sqliteInsertChunk is how many agent_event rows one INSERT carries on
// SQLite: 7 parameters each, far under SQLite's limit of 32766. The driver
// finds each parameter's argument by a scan of all the arguments
// (quadratic in their number), so statements stay small; a group commit at
// the mix's pace (under 32 rows) is one statement.
const sqliteInsertChunk = 32

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

// commit writes batch in one transaction, optimistically: it does not look
// up whether an event id is stored already, and lets the unique index on id
// reject a replayed event. If that transaction fails for any reason, it
// writes each request alone, looking the ids up first (so a replayed event
// is skipped), and one bad request fails only itself. A transaction that
// fails with a transient error (see eventlog.Transient) is run again, looking the
// ids up, so a commit whose answer was lost is not applied twice.
func (s *Store) commit(batch []*request) {
	if s.side != nil {
		if batch = s.commitSide(batch); len(batch) == 0 {
			return
		}
	}
	evs, err := s.applyRetry(batch, false)
	if err == nil {
		s.emit(evs, batch)
		for _, r := range batch {
			r.Answer(nil)
		}
		return
	}
	s.wr.Stats.Split++
	for i, r := range batch {
		evs, err := s.applyRetry(batch[i:i+1], true)
		if err != nil {
			s.fail(r, err)
			continue
		}
		s.emit(evs, batch[i:i+1])
		r.Answer(nil)
	}
}

// fail answers r with err and clears the seqs its failed transaction set.
func (s *Store) fail(r *request, err error) {
	for _, rec := range r.Recs {
		rec.Event.Seq = 0
		if e := rec.Event.Event; e != nil && e.Message != nil {
			e.Message.Seq = 0
		}
	}
	r.Answer(err)
}

// emit publishes a commit's events, after any that other instances
// committed below them (see catchUp), and through the highest seq of the
// batch's records: a retried transaction finds the events an earlier
// attempt committed already, and those are published from the log. If
// they cannot be read, evs are not published now either (that would break
// seq order): the next commit, or the listener on the next notification
// or after eventlog.ListenIdle, publishes them, late but in order.
func (s *Store) emit(evs []agent.Encoded, batch []*request) {
	s.wr.Stats.Batches++
	s.wr.Stats.Records += int64(len(evs))
	var upTo int64
	if len(evs) > 0 {
		upTo = evs[len(evs)-1].Seq
	}
	for _, r := range batch {
		for _, rec := range r.Recs {
			upTo = max(upTo, rec.Event.Seq)
		}
	}
	if upTo == 0 {
		return
	}
	if err := s.catchUp(s.ctx, upTo, evs); err != nil {
		s.log.Error("publish_deferred", "err", err, "through_seq", upTo)
	}
}

// apply runs one transaction for batch and returns the events it stored, in
// seq order, each encoded once: those bytes are stored and published. With checked, it first looks up which event ids are stored and
// skips those events; without, a stored id fails the transaction. The seq
// counter moves only when the transaction commits, so a rolled-back batch
// leaves no gap.
func (s *Store) apply(batch []*request, checked bool) ([]agent.Encoded, error) {
	now := s.now()
	var (
		evs  []agent.Encoded
		last int64
		cx   *eventlog.RunTx
		ox   *eventlog.RunTx
	)
	err := s.w.WithContext(s.ctx).Transaction(func(tx *gorm.DB) error {
		evs = evs[:0]
		s.sideRedact = s.sideRedact[:0]
		s.dropOwners()        // an earlier attempt's (owner.go)
		cx = s.convIx.Begin() // eventlog/runindex.go
		ox = s.ownerIx.Begin()
		seq := s.lastSeq
		if s.postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", s.seqLock).Error; err != nil {
				return fmt.Errorf("seq lock: %w", err)
			}
			pruned, head, err := bounds(tx)
			if err != nil {
				return err
			}
			seq = max(pruned, head)
		}
		stored := make(map[string]int64, len(batch))
		facts := txFacts{} // what this attempt wrote: fresh per transaction
		if s.temp != nil {
			s.temp.seed(facts, batch) // and what earlier ones did (temp.go)
		}
		if checked {
			if err := storedIDs(tx, batch, stored); err != nil {
				return err
			}
		}
		rows := make([]eventRow, 0, len(batch))
		for _, r := range batch {
			for _, rec := range r.Recs {
				if have, ok := stored[rec.Event.ID]; ok && rec.Event.ID != "" {
					setSeq(rec, s.eventSeq(have))
					continue
				}
				seq++
				if !deferrable(rec) {
					if err := facts.flush(tx); err != nil {
						return err
					}
				}
				if err := applyQueue(tx, rec); err != nil {
					return err
				}
				if err := applyApproval(tx, rec, s.instance); err != nil {
					return err
				}
				if err := applyElicit(tx, rec); err != nil { // elicit.go
					return err
				}
				quiet := s.temp != nil && rec.Quiet // applied, never published (temp.go)
				// A message that follows the head is encoded once applyRows
				// has named its parent.
				followed := needsParent(rec)
				row, enc, err := s.prepare(rec, seq, now, quiet || followed)
				if err != nil {
					return err
				}
				stored[rec.Event.ID] = seq
				if row.ConversationID != nil && s.temp == nil { // before a delete's redaction reads the index
					if err := cx.Add(rawCtx(tx), engineDB(tx), *row.ConversationID, seq, isDelta(rec)); err != nil {
						return fmt.Errorf("conversation index: %w", err)
					}
				}
				if err := s.own(tx, rec, &row, &enc); err != nil { // owner.go; before a delete
					return err
				}
				if row.Owner != "" && s.temp == nil {
					if err := ox.Add(rawCtx(tx), engineDB(tx), row.Owner, seq, isDelta(rec)); err != nil {
						return fmt.Errorf("owner index: %w", err)
					}
				}
				if err := s.applyRows(tx, rec, seq, now, facts); err != nil {
					return err
				}
				if followed && !quiet {
					if row, enc, err = s.encode(rec, row); err != nil {
						return err
					}
					enc.Owner = row.Owner
				}
				rows = append(rows, row)
				if !quiet {
					evs = append(evs, enc)
				}
			}
			if err := facts.flush(tx); err != nil {
				return err
			}
			if err := keepImportedDate(tx, r.Recs); err != nil {
				return err
			}
		}
		if len(rows) > 0 && s.temp == nil { // a temp database logs no event (temp.go)
			if err := s.insertEvents(tx, rows); err != nil {
				return fmt.Errorf("insert events: %w", err)
			}
			if err := cx.Finish(rawCtx(tx), engineDB(tx), seq); err != nil {
				return err
			}
			if err := ox.Finish(rawCtx(tx), engineDB(tx), seq); err != nil {
				return err
			}
			if s.postgres {
				// Delivered on commit, to every instance's listener.
				if err := tx.Exec("SELECT pg_notify(?, ?)", s.channel, notice(seq, s.instance)).Error; err != nil {
					return fmt.Errorf("notify: %w", err)
				}
			}
		}
		last = seq
		if s.temp != nil {
			s.temp.facts = facts // kept only when this commits
		}
		return nil
	})
	if err != nil {
		s.dropOwners()
		return nil, err
	}
	s.keepOwners()
	cx.Done()
	ox.Done()
	s.lastSeq = last
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
	return evs, nil
}

// insertEvents writes rows in tx, in as few statements as the database
// takes well. The statements are built here: gorm's CreateInBatches spends
// its time in reflection.
//
// On SQLite it is one INSERT OR FAIL per sqliteInsertChunk rows, its text
// kept per row count (insertText). A plain multi-row INSERT (ON CONFLICT
// ABORT) may fail halfway through, so SQLite keeps a statement journal of
// every page it touches to undo it alone (spilled to a temp file above 16
// pages: a write(2) per page). With FAIL a conflict stops the statement
// without undoing its earlier rows, so no journal is kept; the writer rolls
// the whole transaction back on any error anyway.
//
// On PostgreSQL it is one INSERT of unnest()ed arrays (insertPostgres).
func (s *Store) insertEvents(tx *gorm.DB, rows []eventRow) error {
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return fmt.Errorf("writer transaction is a %T, not *sql.Tx", tx.Statement.ConnPool)
	}
	if s.postgres {
		return s.insertPostgres(sqlTx, rows)
	}
	args := s.insertArgs[:0]
	defer func() { clear(args); s.insertArgs = args[:0] }() // no payload kept alive
	for len(rows) > 0 {
		chunk := rows[:min(sqliteInsertChunk, len(rows))]
		rows = rows[len(chunk):]
		args = args[:0]
		for i := range chunk {
			r := &chunk[i]
			var cid any // a nil *string would be bound by reflection
			if r.ConversationID != nil {
				cid = *r.ConversationID
			}
			args = append(args, r.Seq, r.ID, cid, r.CreatedAt, r.Type, r.Payload, r.Owner)
		}
		if _, err := sqlTx.ExecContext(s.ctx, s.insertText(len(chunk)), args...); err != nil {
			return err
		}
	}
	return nil
}

// insertText is the SQLite INSERT of n agent_event rows, built once per n
// (at most sqliteInsertChunk of them) and kept by the writer.
func (s *Store) insertText(n int) string {
	if s.insertSQL == nil {
		s.insertSQL = make([]string, sqliteInsertChunk+1)
	}
	if q := s.insertSQL[n]; q != "" {
		return q
	}
	var q strings.Builder
	q.WriteString("INSERT OR FAIL INTO agent_event (seq, id, conversation_id, created_at, type, payload, owner) VALUES ")
	for i := range n {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(?,?,?,?,?,?,?)")
	}
	s.insertSQL[n] = q.String()
	return s.insertSQL[n]
}

// insertPostgresSQL inserts agent_event rows given as one array per column,
// and their conversation index entries (convindex.go): one statement text
// for any number of rows, so pgx prepares it once per connection and every
// commit only binds its seven arrays.
const insertPostgresSQL = "WITH e AS (INSERT INTO agent_event (seq, id, conversation_id, created_at, type, payload, owner) " +
	"SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[]) RETURNING conversation_id, seq) " +
	"INSERT INTO event_conversation (conversation_id, seq) SELECT conversation_id, seq FROM e WHERE conversation_id IS NOT NULL ON CONFLICT DO NOTHING"

// postgresInsertBytes bounds the payload bytes of one PostgreSQL INSERT
// (its message may not pass 1 GiB): a batch of large events takes several.
const postgresInsertBytes = 64 << 20

// insertPostgres writes rows with insertPostgresSQL, as few statements as
// postgresInsertBytes allows.
func (s *Store) insertPostgres(tx *sql.Tx, rows []eventRow) error {
	for len(rows) > 0 {
		n, size := 0, 0
		for n < len(rows) && (n == 0 || size+len(rows[n].Payload) <= postgresInsertBytes) {
			size += len(rows[n].Payload)
			n++
		}
		chunk := rows[:n]
		rows = rows[n:]
		var (
			seq     = make([]int64, n)
			id      = make([]string, n)
			cid     = make([]*string, n) // nil: NULL
			created = make([]time.Time, n)
			typ     = make([]string, n)
			payload = make([]string, n)
			owner   = make([]string, n)
		)
		for i := range chunk {
			r := &chunk[i]
			seq[i], id[i], cid[i], created[i], typ[i], payload[i], owner[i] = r.Seq, r.ID, r.ConversationID, r.CreatedAt, r.Type, r.Payload, r.Owner
		}
		if _, err := tx.ExecContext(s.ctx, insertPostgresSQL, seq, id, cid, created, typ, payload, owner); err != nil {
			return err
		}
	}
	return nil
}

// storedIDs adds to stored the seqs of the batch's event ids that are
// stored already.
func storedIDs(tx *gorm.DB, batch []*request, stored map[string]int64) error {
	var ids []string
	for _, r := range batch {
		for _, rec := range r.Recs {
			if textOK(rec.Event.ID) { // any other is refused by prepare
				ids = append(ids, rec.Event.ID)
			}
		}
	}
	for len(ids) > 0 {
		chunk := ids[:min(idChunk, len(ids))]
		ids = ids[len(chunk):]
		var found []struct {
			ID  string
			Seq int64
		}
		if err := tx.Model(&eventRow{}).Select("id", "seq").Where("id IN ?", chunk).Scan(&found).Error; err != nil {
			return fmt.Errorf("look up event ids: %w", err)
		}
		for _, f := range found {
			stored[f.ID] = f.Seq
		}
	}
	return nil
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
		if err := indexRecord(tx, rec); err != nil {
			return err
		}
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

// bounds reads the pruned-through seq and the highest stored seq.
func bounds(db *gorm.DB) (pruned, head int64, err error) {
	var r struct {
		Head   int64
		Pruned *string
	}
	if err := db.Raw("SELECT (SELECT COALESCE(MAX(seq), 0) FROM agent_event) AS head, (SELECT value FROM meta WHERE key = ?) AS pruned",
		metaPrunedThrough).Scan(&r).Error; err != nil {
		return 0, 0, fmt.Errorf("read bounds: %w", err)
	}
	if r.Pruned != nil {
		if pruned, err = strconv.ParseInt(*r.Pruned, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("read bounds: pruned_through %q: %w", *r.Pruned, err)
		}
	}
	return pruned, r.Head, nil
}

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
