package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// Every stored event carries the owner of its conversation (agent_event.
// owner, indexed with seq), so that a member's replay of the log reads
// their own events only, and every published event carries it too
// (agent.Encoded.Owner), which is what the broker matches a member's live
// streams by. A conversation's owner never changes, so the writer keeps
// the owners it looked up.

// ownersMax bounds the writer's map of owners; past it the map starts
// over (a lookup is one indexed read of a row the transaction touches
// anyway).
const ownersMax = 1 << 16

// owners maps conversation ids to their owners; only the writer goroutine
// uses it. It holds only owners of committed rows: what a transaction
// learns waits in Store.ownersTx until that transaction commits, so a
// rolled-back create (say, of an id that is someone else's) leaves no
// trace that later events of the conversation would take their owner from.
type owners map[string]string

// own sets the owner of rec's event on its row, its encoding and the
// record's event, in tx: from the conversation rec creates, else from the
// conversation's row (read before rec's own rows are applied, so a
// delete's event still finds it). An event of no conversation has none.
func (s *Store) own(tx *gorm.DB, rec *agent.Record, row *eventRow, enc *agent.Encoded) error {
	cid := rec.Event.ConversationID
	owner := ""
	switch {
	case cid == "":
	case rec.Event.Agent != nil && rec.Event.Agent.Type == agent.AgentCreated:
		owner = agent.LocalUser
		if rec.Conversation != nil {
			owner = agent.OwnerOf(*rec.Conversation)
		}
		s.remember(cid, owner)
	default:
		if o, ok := s.ownersTx[cid]; ok {
			owner = o
			break
		}
		if o, ok := s.owners[cid]; ok {
			owner = o
			break
		}
		var o sql.NullString
		err := rawRow(tx, "SELECT owner FROM conversation WHERE id = ?", cid).Scan(&o)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			owner = agent.LocalUser // a conversation deleted already: an admin's to see
		case err != nil:
			return fmt.Errorf("owner of %s: %w", cid, err)
		default:
			owner = o.String
			s.remember(cid, owner)
		}
	}
	rec.Event.Owner, row.Owner, enc.Owner = owner, owner, owner
	return nil
}

// remember notes cid's owner for the transaction being applied; keepOwners
// makes it known to later transactions once that one has committed.
func (s *Store) remember(cid, owner string) {
	if s.ownersTx == nil {
		s.ownersTx = make(owners, 8)
	}
	s.ownersTx[cid] = owner
}

// keepOwners moves what the committed transaction learnt into the writer's
// map; dropOwners forgets what a failed one learnt.
func (s *Store) keepOwners() {
	for cid, owner := range s.ownersTx {
		if s.owners == nil || len(s.owners) >= ownersMax {
			s.owners = make(owners, 64)
		}
		s.owners[cid] = owner
	}
	clear(s.ownersTx)
}

func (s *Store) dropOwners() { clear(s.ownersTx) }

// metaOwnersRepaired marks a database whose events' owners were checked
// against their conversations (repairOwners).
const metaOwnersRepaired = "owners_repaired"

// repairOwners gives every stored event the owner of its conversation,
// once per database. Before the writer kept owners only after commit, a
// refused create of another user's conversation id left the caller as the
// owner of that conversation's later events (their rows, their delta log
// records and the owner index). Rows are updated; a delta log record,
// which is never rewritten for this, gets an entry in event_owner_fix that
// its reads apply (plain mode's fold included: side is then the log it
// folds); in fast mode on SQLite the owner index is then written anew. It
// returns the owner index's new watermark, or mark when nothing changed.
func repairOwners(tx *gorm.DB, postgres, plain bool, side *eventlog.DeltaLog, mark int64) (int64, error) {
	if err := tx.Exec("CREATE TABLE IF NOT EXISTS event_owner_fix (seq BIGINT PRIMARY KEY, owner TEXT NOT NULL)").Error; err != nil {
		return 0, err
	}
	if side != nil {
		if err := loadOwnerFixes(tx, side); err != nil {
			return 0, err
		}
	}
	var done []string
	if err := tx.Raw("SELECT value FROM meta WHERE key = ?", metaOwnersRepaired).Scan(&done).Error; err != nil {
		return 0, err
	}
	if len(done) > 0 {
		return mark, nil
	}
	res := tx.Exec(`UPDATE agent_event SET owner = (SELECT c.owner FROM conversation c WHERE c.id = agent_event.conversation_id)
		WHERE conversation_id IS NOT NULL AND EXISTS (SELECT 1 FROM conversation c
			WHERE c.id = agent_event.conversation_id AND c.owner IS NOT NULL AND c.owner <> '' AND c.owner <> agent_event.owner)`)
	if res.Error != nil {
		return 0, fmt.Errorf("repair event owners: %w", res.Error)
	}
	changed := res.RowsAffected
	if side != nil {
		n, err := repairSideOwners(tx, side)
		if err != nil {
			return 0, fmt.Errorf("repair delta log owners: %w", err)
		}
		changed += n
	}
	if changed > 0 && !postgres && !plain {
		// The owner index, written anew from the repaired events.
		if err := tx.Exec("DELETE FROM event_owner").Error; err != nil {
			return 0, err
		}
		if err := tx.Exec("INSERT INTO event_owner (owner, seq) SELECT owner, seq FROM agent_event WHERE owner <> ''").Error; err != nil {
			return 0, fmt.Errorf("refill event_owner: %w", err)
		}
		if err := eventlog.FillFromDeltas(rawCtx(tx), engineDB(tx), ownerRuns.Runs, side); err != nil {
			return 0, err
		}
		var head int64
		if err := tx.Raw("SELECT COALESCE(MAX(seq), 0) FROM agent_event").Scan(&head).Error; err != nil {
			return 0, err
		}
		if side != nil {
			head = max(head, side.Head())
		}
		if err := eventlog.StoreMark(rawCtx(tx), engineDB(tx), ownerRuns.Runs, head); err != nil {
			return 0, err
		}
		mark = head
	}
	if err := tx.Exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		metaOwnersRepaired, strconv.FormatInt(changed, 10)).Error; err != nil {
		return 0, err
	}
	return mark, nil
}

// loadOwnerFixes gives side the owners of event_owner_fix: those its
// reads give records in place of the one their frame names (repairOwners).
func loadOwnerFixes(tx *gorm.DB, side *eventlog.DeltaLog) error {
	var fixes []struct {
		Seq   int64
		Owner string
	}
	if err := tx.Raw("SELECT seq, owner FROM event_owner_fix").Scan(&fixes).Error; err != nil {
		return fmt.Errorf("event_owner_fix: %w", err)
	}
	for _, f := range fixes {
		side.FixOwner(f.Seq, f.Owner)
	}
	return nil
}

// repairSideOwners records in event_owner_fix, and gives side, the owner
// of each record whose frame names another than its conversation's.
func repairSideOwners(tx *gorm.DB, side *eventlog.DeltaLog) (int64, error) {
	type rec struct {
		seq   int64
		owner string
	}
	byConv := map[string][]rec{}
	if err := side.Each(func(d eventlog.Delta) error {
		byConv[d.Conv] = append(byConv[d.Conv], rec{d.Seq, d.Owner})
		return nil
	}); err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(byConv))
	for c := range byConv {
		ids = append(ids, c)
	}
	var n int64
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), idChunk)]
		ids = ids[len(chunk):]
		var convs []struct {
			ID    string
			Owner string
		}
		if err := tx.Raw("SELECT id, owner FROM conversation WHERE id IN ? AND owner IS NOT NULL AND owner <> ''", chunk).Scan(&convs).Error; err != nil {
			return 0, err
		}
		for _, c := range convs {
			for _, r := range byConv[c.ID] {
				if r.owner == c.Owner {
					continue
				}
				if err := tx.Exec("INSERT INTO event_owner_fix (seq, owner) VALUES (?, ?) ON CONFLICT (seq) DO UPDATE SET owner = excluded.owner", r.seq, c.Owner).Error; err != nil {
					return 0, err
				}
				side.FixOwner(r.seq, c.Owner)
				n++
			}
		}
	}
	return n, nil
}
