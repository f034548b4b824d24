package store

import (
	"context"
	"fmt"
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
// into agent_event (eventlog.FoldDeltaLog) and makes the two indexes
// (eventlog.MigratePlain); opening it in
// fast mode writes the run index rows of every event after their
// watermarks (eventlog.Recover: the events plain mode wrote are among them) and
// drops the two indexes (eventlog.DropPlain). PostgreSQL has no speed layer of this kind (no
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
// of event_conversation and event_owner (eventlog/mode.go: their
// migration, their drop and the read of a conversation's seqs). Fast mode
// drops them (their entries cost every token a B-tree insert).
const (
	plainConvIndex  = "idx_agent_event_conversation"
	plainOwnerIndex = droppedOwnerIndex // PostgreSQL's, the same (owner, seq)
)

var (
	plainConv  = eventlog.NewPlainIndex(plainConvIndex, convRuns.Runs)
	plainOwner = eventlog.NewPlainIndex(plainOwnerIndex, ownerRuns.Runs)
	// plainIndexes are both, in the order they are made.
	plainIndexes = []*eventlog.PlainIndex{plainConv, plainOwner}
)

// storedConversations is the delta log's question to db (RedactOrphans,
// eventlog.FoldDeltaLog): which of some conversation ids are stored.
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
	return plainConv.Seqs(db, cid, after, want)
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
	lim, args := withLimit(q.Limit, args)
	query += " ORDER BY seq" + lim
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
