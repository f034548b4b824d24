package store

import (
	"database/sql"
	"fmt"
	"strconv"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// The conversation index and the owner index: which seqs of the log belong
// to a conversation, and to an owner. Their mechanics (runs of seqs in a
// table of their own, the writer's deferred entries, watermarks and the
// repair at open) are the engine's (internal/eventlog's runindex.go, and
// docs/store.md); here are their tables, the reads of their events and
// their migrations. On PostgreSQL (several instances, each reading the
// others' events) every conversation entry is written with its event, in
// the events' INSERT (eventlog/commit.go, Table.Runs), and the owner's events are read
// by idx_event_owner_seq.

// metaIndexedThrough is the meta key of the conversation index's watermark
// (decimal seq).
const metaIndexedThrough = "indexed_through"

// metaOwnerIndexedThrough is the owner index's watermark.
const metaOwnerIndexedThrough = "owner_indexed_through"

// runIndex is one table of runs of seqs by a column of agent_event, and a
// dense range of its events (rangeFrom, after the columns).
type runIndex struct {
	*eventlog.Runs
	rangeFrom string
}

var (
	// convRuns: event_conversation, by conversation_id.
	convRuns = &runIndex{eventlog.NewRuns(eventlog.Runs{Table: "event_conversation", Column: "conversation_id", Events: "agent_event",
		Indexed: "conversation_id IS NOT NULL", MarkKey: metaIndexedThrough,
		Key: func(e *agent.Encoded) string { return e.ConversationID }}), convRangeFrom}
	// ownerRuns: event_owner, by owner (a member's replay of the whole
	// log, whose entries 100 users' streams scattered over as many leaves
	// of an index of agent_event as they are users; docs/BENCHMARKS.md,
	// session 11).
	ownerRuns = &runIndex{eventlog.NewRuns(eventlog.Runs{Table: "event_owner", Column: "owner", Events: "agent_event",
		Indexed: "owner <> ''", MarkKey: metaOwnerIndexedThrough,
		Key: func(e *agent.Encoded) string { return e.Owner }}), ownerRangeFrom}
)

// engineDB is tx's connection as the engine takes it (with rawCtx(tx)):
// the writer's transaction, the migration's connection or a pool
// (SQLite's ? placeholders).
func engineDB(tx *gorm.DB) eventlog.DB { return tx.Statement.ConnPool }

// The reads of the events of event_conversation's rows (index_test.go
// checks their plans; the rows' own read is Runs.RunsSQL): the events of
// seqs, by seq.
const (
	// The events of those seqs: a list of them, or a dense range (its
	// other conversations' rows read and dropped).
	convEventsSQL = "SELECT seq, payload" + eventsBySeq
	convRangeSQL  = "SELECT seq, payload" + convRangeFrom
	eventsBySeq   = " FROM agent_event WHERE seq IN "
	convRangeFrom = " FROM agent_event WHERE seq >= ? AND seq <= ? AND conversation_id = ?"
	// The same of event_owner: an owner's events as a dense range.
	ownerRangeFrom = " FROM agent_event WHERE seq >= ? AND seq <= ? AND owner = ?"
)

// convSeqs returns the seqs above after that event_conversation holds for
// conversation cid, the rows read in order until they give want seqs
// (≤ 0: all), and whether rows are left then. The rows are stepped
// lazily, so a page reads only the rows it needs.
func convSeqs(db *gorm.DB, cid string, after int64, want int) (seqs []int64, more bool, err error) {
	return runSeqs(db, convRuns, cid, after, want)
}

// runSeqs is convSeqs of any runIndex: the seqs k's table holds for id.
func runSeqs(db *gorm.DB, k *runIndex, id string, after int64, want int) (seqs []int64, more bool, err error) {
	return k.Seqs(func(q string, args ...any) (*sql.Rows, error) { return db.Raw(q, args...).Rows() }, id, after, want)
}

// isDelta tells whether rec's event is a piece of a streamed answer: a
// text delta, or the start of the answer's reasoning or response, which
// comes with its first delta (agent's turn). Its index entry the writer
// may defer, and alone in a commit it goes to the delta log: so a turn's
// first tokens, like the rest, wait for no SQLite transaction.
func isDelta(rec *agent.Record) bool {
	e := rec.Event.Event
	if rec.Event.Kind != agent.KindConversation || e == nil {
		return false
	}
	switch e.Type {
	case agent.EventAppendText, agent.EventStartResponse, agent.EventStartReasoning:
		return true
	}
	return false
}

// droppedConvIndex is the index of agent_event that event_conversation
// replaced.
const droppedConvIndex = "idx_event_conversation_seq"

// migrateConvIndex creates event_conversation; in a database from before
// it, fills it from agent_event (a row per event) and drops the index it
// replaces. On SQLite it then writes the entries a crash left pending, and
// returns the watermark it leaves (every entry through it is written).
func migrateConvIndex(tx *gorm.DB, postgres bool, side *eventlog.DeltaLog) (int64, error) {
	ddl := "CREATE TABLE IF NOT EXISTS event_conversation (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID"
	if postgres {
		ddl = "CREATE TABLE IF NOT EXISTS event_conversation (conversation_id text NOT NULL, seq bigint NOT NULL, seqs bytea, PRIMARY KEY (conversation_id, seq))"
	}
	if err := tx.Exec(ddl).Error; err != nil {
		return 0, err
	}
	if tx.Migrator().HasIndex(&eventRow{}, droppedConvIndex) {
		if err := tx.Exec("INSERT INTO event_conversation (conversation_id, seq) SELECT conversation_id, seq FROM agent_event WHERE conversation_id IS NOT NULL ON CONFLICT DO NOTHING").Error; err != nil {
			return 0, fmt.Errorf("fill event_conversation: %w", err)
		}
		if err := eventlog.FillFromDeltas(rawCtx(tx), engineDB(tx), convRuns.Runs, side); err != nil {
			return 0, err
		}
		if err := tx.Exec("DROP INDEX " + droppedConvIndex).Error; err != nil {
			return 0, err
		}
		if !postgres {
			var head int64
			if err := tx.Raw("SELECT COALESCE(MAX(seq), 0) FROM agent_event").Scan(&head).Error; err != nil {
				return 0, err
			}
			if side != nil {
				head = max(head, side.Head())
			}
			return head, eventlog.StoreMark(rawCtx(tx), engineDB(tx), convRuns.Runs, head) // all written
		}
	}
	if postgres {
		return 0, nil
	}
	return eventlog.Recover(rawCtx(tx), engineDB(tx), convRuns.Runs, side)
}

// droppedOwnerIndex is the index of agent_event that event_owner replaced
// on SQLite; PostgreSQL, whose writer writes every entry with its event
// anyway, keeps it and reads by it.
const droppedOwnerIndex = "idx_event_owner_seq"

// migrateOwnerIndex keeps the owner index. On PostgreSQL that is
// droppedOwnerIndex. On SQLite it creates event_owner, and where it did not
// exist yet (a database from before it, or before accounts) fills it from
// agent_event (a row per event) and drops droppedOwnerIndex; it then writes
// the entries a crash left pending and returns the watermark it leaves.
func migrateOwnerIndex(tx *gorm.DB, postgres bool, side *eventlog.DeltaLog) (int64, error) {
	if postgres {
		return 0, tx.Exec("CREATE INDEX IF NOT EXISTS " + droppedOwnerIndex + " ON agent_event (owner, seq)").Error
	}
	if !tx.Migrator().HasTable(ownerRuns.Table) {
		if err := tx.Exec("CREATE TABLE event_owner (owner TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (owner, seq)) WITHOUT ROWID").Error; err != nil {
			return 0, err
		}
		if err := tx.Exec("INSERT INTO event_owner (owner, seq) SELECT owner, seq FROM agent_event WHERE owner <> ''").Error; err != nil {
			return 0, fmt.Errorf("fill event_owner: %w", err)
		}
		if err := eventlog.FillFromDeltas(rawCtx(tx), engineDB(tx), ownerRuns.Runs, side); err != nil {
			return 0, err
		}
		if err := tx.Exec("DROP INDEX IF EXISTS " + droppedOwnerIndex).Error; err != nil {
			return 0, err
		}
		var head int64
		if err := tx.Raw("SELECT COALESCE(MAX(seq), 0) FROM agent_event").Scan(&head).Error; err != nil {
			return 0, err
		}
		if side != nil {
			head = max(head, side.Head())
		}
		return head, eventlog.StoreMark(rawCtx(tx), engineDB(tx), ownerRuns.Runs, head) // all written
	}
	return eventlog.Recover(rawCtx(tx), engineDB(tx), ownerRuns.Runs, side)
}

// seqList is seqs as an SQL list of integers ("1,2,3"): they are int64s,
// so no parameter is needed.
func seqList(seqs []int64) string {
	b := make([]byte, 0, 8*len(seqs))
	for i, s := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s, 10)
	}
	return string(b)
}
