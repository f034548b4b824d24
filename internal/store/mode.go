package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// Mode is how the engine keeps the log on SQLite (docs/store.md). Both
// keep the same contract, and a database written in one opens in the
// other.
//
//   - ModeFast, the default: the speed layer. Text deltas go to the delta
//     log (deltalog.go), a conversation's and an owner's events are found
//     by the run indexes event_conversation and event_owner (convindex.go),
//     the writer and the replays run on the own driver (sqlitedrv), a
//     checkpointer runs beside the writer, and reads are cached until the
//     next commit.
//   - ModePlain: none of it. One SQL transaction per group commit through
//     gorm on glebarez/go-sqlite; a conversation's and an owner's events
//     are read from agent_event by the ordinary indexes (conversation_id,
//     seq) and (owner, seq).
//
// Opening a database in plain mode folds a delta log the fast mode left
// into agent_event (foldDeltaLog) and makes the two indexes; opening it in
// fast mode writes the run index rows of every event after their
// watermarks (eventlog.Recover: the events plain mode wrote are among them) and
// drops the two indexes. PostgreSQL has no speed layer of this kind (no
// delta log, no own driver, and every conversation index entry written with
// its event): both modes run the one path there.
type Mode string

const (
	ModeFast  Mode = "fast"
	ModePlain Mode = "plain"
)

// ModeEnv is the environment variable Options.Mode "" reads, so that one
// variable switches the binary and every test that opens a store.
const ModeEnv = "AGENTIK_STORE_MODE"

// ParseMode reads a mode's name; "" is ModeFast.
func ParseMode(v string) (Mode, error) {
	switch Mode(strings.TrimSpace(v)) {
	case "", ModeFast:
		return ModeFast, nil
	case ModePlain:
		return ModePlain, nil
	}
	return "", agent.Errorf(agent.CodeBadRequest, "store mode %q: use fast or plain", v)
}

// modeOf is Options.Mode, or the environment's when it is "".
func modeOf(m Mode) (Mode, error) {
	if m != "" {
		return ParseMode(string(m))
	}
	mode, err := ParseMode(os.Getenv(ModeEnv))
	if err != nil {
		return "", fmt.Errorf("store: %s: %w", ModeEnv, err)
	}
	return mode, nil
}

// The ordinary indexes of agent_event that plain mode reads by, in place
// of event_conversation and event_owner. Fast mode drops them (their
// entries cost every token a B-tree insert).
const (
	plainConvIndex  = "idx_agent_event_conversation"
	plainOwnerIndex = droppedOwnerIndex // PostgreSQL's, the same (owner, seq)
)

// migratePlain makes plain mode's two indexes, and the run index tables
// (left empty by plain mode, so that Prune's statements find them).
func migratePlain(tx *gorm.DB) error {
	for _, ddl := range []string{
		"CREATE INDEX IF NOT EXISTS " + plainConvIndex + " ON agent_event (conversation_id, seq)",
		"CREATE INDEX IF NOT EXISTS " + plainOwnerIndex + " ON agent_event (owner, seq)",
		"CREATE TABLE IF NOT EXISTS event_conversation (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID",
		"CREATE TABLE IF NOT EXISTS event_owner (owner TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY (owner, seq)) WITHOUT ROWID",
	} {
		if err := tx.Exec(ddl).Error; err != nil {
			return fmt.Errorf("plain mode: %w", err)
		}
	}
	return nil
}

// dropPlainIndexes drops plain mode's indexes, once fast mode's run
// indexes hold every event.
func dropPlainIndexes(tx *gorm.DB) error {
	for _, idx := range []string{plainConvIndex, plainOwnerIndex} {
		if err := tx.Exec("DROP INDEX IF EXISTS " + idx).Error; err != nil {
			return err
		}
	}
	return nil
}

// leftDeltaLog opens the delta log the fast mode left beside the database
// at path, or returns nil when there is none.
func leftDeltaLog(path, epoch string, log *slog.Logger) (*eventlog.DeltaLog, error) {
	if epoch == "" {
		return nil, nil // a new database
	}
	if _, err := os.Stat(path + "-deltas"); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return eventlog.OpenDeltaLog(path, epoch, log, redactedPayload)
}

// foldDeltaLog writes the records of the delta log l into agent_event, in
// one transaction, then removes its files: plain mode reads agent_event
// alone. The records are first cut as fast mode cuts them at open (below
// pruned_through, and those of a deleted conversation redacted). A crash
// before the files are gone folds them again (a stored seq is kept).
func foldDeltaLog(db *gorm.DB, l *eventlog.DeltaLog) error {
	defer l.Close()
	pruned, _, err := bounds(db)
	if err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := l.Prune(pruned); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := l.RedactOrphans(storedConversations(db)); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		var args []any
		flush := func() error {
			if len(args) == 0 {
				return nil
			}
			q := "INSERT OR IGNORE INTO agent_event (seq, id, conversation_id, created_at, type, payload, owner) VALUES " +
				strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?),", len(args)/7), ",")
			err := tx.Exec(q, args...).Error
			args = args[:0]
			return err
		}
		if err := l.Each(func(d eventlog.Delta) error {
			args = append(args, d.Seq, d.ID, d.Conv, d.Created, agent.KindConversation, string(d.JSON), d.Owner)
			if len(args) >= 7*eventlog.SQLiteInsertChunk {
				return flush()
			}
			return nil
		}); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := os.RemoveAll(l.Dir()); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	return nil
}

// storedConversations is redactOrphans' question to db: which of some
// conversation ids are stored.
func storedConversations(db *gorm.DB) func(ids []string) (map[string]bool, error) {
	return func(ids []string) (map[string]bool, error) {
		var have []string
		if err := db.Raw("SELECT id FROM conversation WHERE id IN ?", ids).Scan(&have).Error; err != nil {
			return nil, fmt.Errorf("store: delta log: %w", err)
		}
		m := make(map[string]bool, len(have))
		for _, id := range have {
			m[id] = true
		}
		return m, nil
	}
}

// plainConvSeqsSQL is conversationSeqs in plain mode: by plainConvIndex.
const plainConvSeqsSQL = "SELECT seq FROM agent_event INDEXED BY " + plainConvIndex + " WHERE conversation_id = ? AND seq > ? ORDER BY seq"

// plainConvEventsSQL is plainConversationEvents' query, before its filters:
// by plainConvIndex, also with a member's filter on the owner (the planner
// would take the owner's index and read all their events).
const plainConvEventsSQL = "SELECT seq, payload FROM agent_event INDEXED BY " + plainConvIndex + " WHERE conversation_id = ? AND seq > ? AND type = ?"

// conversationSeqs is convSeqs in either mode: the seqs of conversation
// cid's events above after, at most want (≤ 0: all), and whether more are
// left; in plain mode read from agent_event.
func conversationSeqs(db *gorm.DB, plain bool, cid string, after int64, want int) (seqs []int64, more bool, err error) {
	if !plain {
		return convSeqs(db, cid, after, want)
	}
	q, args := plainConvSeqsSQL, []any{cid, after}
	if want > 0 {
		q += " LIMIT ?"
		args = append(args, want+1)
	}
	if err := db.Raw(q, args...).Scan(&seqs).Error; err != nil {
		return nil, false, err
	}
	if want > 0 && len(seqs) > want {
		return seqs[:want], true, nil
	}
	return seqs, false, nil
}

// plainConversationEvents is conversationEvents in plain mode: one query
// of agent_event by plainConvIndex.
func (s *Store) plainConversationEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error) {
	if q.AgentOnly {
		return nil, nil
	}
	query := plainConvEventsSQL
	args := []any{q.ConversationID, q.After, agent.KindConversation}
	if q.Owner != "" {
		query += " AND owner = ?"
		args = append(args, q.Owner)
	}
	query += " ORDER BY seq" + limitText(q.Limit)
	maxBytes := 0
	if q.Limit > 0 {
		maxBytes = s.pageB
	}
	known := eventKnown{kind: agent.KindConversation, conversationID: q.ConversationID, both: true, owner: q.Owner}
	out, err := s.scanEvents(ctx, known, min(max(q.Limit, 0), 4096), maxBytes, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: events of %s after %d: %w", q.ConversationID, q.After, err)
	}
	return out, nil
}
