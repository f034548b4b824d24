package store

import (
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
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
// uses it.
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

func (s *Store) remember(cid, owner string) {
	if s.owners == nil || len(s.owners) >= ownersMax {
		s.owners = make(owners, 64)
	}
	s.owners[cid] = owner
}
