package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"gorm.io/gorm"
)

func (r conversationRow) conversation() agent.Conversation {
	var size *agent.ContextSize
	if r.ContextWindow > 0 {
		size = &agent.ContextSize{Tokens: r.ContextTokens, Window: r.ContextWindow, Bytes: r.ContextBytes}
	}
	return agent.Conversation{
		Context:      size,
		ID:           r.ID,
		Title:        r.Title,
		CreatedAt:    r.CreatedAt.UTC(),
		UpdatedAt:    r.UpdatedAt.UTC(),
		MessageCount: r.MessageCount,
		Running:      r.Running,
		TurnSeq:      r.TurnSeq,
		Model:        r.Model,
		SystemPrompt: fromColumn(r.SystemPrompt),
		Params:       decodeParams(r.Params),
		Tools:        decodeTools(r.Tools),
		UserTitled:   r.UserTitled,
		Queued:       r.Queued,
		Waiting:      waitingIDs(r.Waiting),
		Head:         deref(r.Head),
		Agent:        r.Agent, // "" (a row from before agents): the default agent
		Parent:       parentOf(r.ParentID, r.ParentCall),
		Owner:        r.Owner,
		Pinned:       r.Pinned,
		Archived:     r.Archived,
		Project:      r.Project,
	}
}

// conversation is r as agent.Conversation, marked temp (with its
// APIRequest, which no column keeps) in a temp database (temp.go).
func (s *Store) conversation(r conversationRow) agent.Conversation {
	c := r.conversation()
	if s.temp != nil {
		c.Temp, c.APIRequest = true, s.temp.apiRequest(c.ID)
	}
	return c
}

func parentOf(id, call string) *agent.Parent {
	if id == "" {
		return nil
	}
	return &agent.Parent{ConversationID: id, CallID: call}
}

func conversations(rows []conversationRow) []agent.Conversation {
	out := make([]agent.Conversation, len(rows))
	for i, r := range rows {
		out[i] = r.conversation()
	}
	return out
}

// conversationColumns are what Conversation reads, in its Scan's order.
const conversationColumns = "id, title, created_at, updated_at, message_count, running, turn_seq, " +
	"context_tokens, context_window, context_bytes, model, system_prompt, params, user_titled, queued, waiting, head, owner, agent, parent_id, parent_call, pinned, archived, project, tools"

// conversationByID reads one conversation's conversationColumns.
const conversationByID = "SELECT " + conversationColumns + " FROM conversation WHERE id = ?"

// Conversation returns one conversation, or agent.ErrNotFound. It reads
// straight into the row's fields, without gorm's reflection, and on SQLite
// keeps the row until the next commit (see readCache): every subscribe to
// a conversation's stream looks its conversation up.
func (s *Store) Conversation(ctx context.Context, id string) (agent.Conversation, error) {
	if !textOK(id) {
		return agent.Conversation{}, fmt.Errorf("store: conversation: %w", missing("conversation", id))
	}
	if r, ok := s.cache.conversation(s.Version(), id); ok {
		return s.conversation(r), nil
	}
	v := s.Version() // before the read: a commit after it moves it
	row := s.readRow(ctx, conversationByID, id)
	var r conversationRow
	if err := row.Scan(&r.ID, &r.Title, &r.CreatedAt, &r.UpdatedAt, &r.MessageCount, &r.Running, &r.TurnSeq,
		&r.ContextTokens, &r.ContextWindow, &r.ContextBytes, &r.Model, &r.SystemPrompt, &r.Params, &r.UserTitled, &r.Queued, &r.Waiting, &r.Head, &r.Owner, &r.Agent, &r.ParentID, &r.ParentCall, &r.Pinned, &r.Archived, &r.Project, &r.Tools); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = gorm.ErrRecordNotFound
		}
		return agent.Conversation{}, fmt.Errorf("store: conversation: %w", notFound(err, "conversation", id))
	}
	s.cache.putConversation(v, r)
	return s.conversation(r), nil
}

// listColumns are the conversation columns a list returns, in
// scanConversation's order.
const listColumns = "id, title, created_at, updated_at, message_count, running, turn_seq, queued, waiting, owner, agent, parent_id, parent_call, pinned, archived, project"

// Conversations returns a page, the archived last and the pinned first,
// each group most recently updated first (ties by id, descending), and the
// total count. limit ≤ 0 means no limit. It reads
// only the returned columns, straight into their fields: the list is read
// far more often than it changes, and gorm's reflection cost more than the
// query.
func (s *Store) Conversations(ctx context.Context, offset, limit int) ([]agent.Conversation, int, error) {
	return s.list(ctx, "", nil, offset, limit)
}

// ConversationsOf implements agent.OwnerLister: Conversations of one
// owner's conversations and those of projects, read by
// idx_conversation_owner_list (and idx_conversation_project).
func (s *Store) ConversationsOf(ctx context.Context, owner string, projects []string, offset, limit int) ([]agent.Conversation, int, error) {
	if !textOK(owner) {
		return []agent.Conversation{}, 0, nil
	}
	return s.list(ctx, owner, projects, offset, limit)
}

// list is Conversations, of owner's (and projects') only when owner is
// not "".
func (s *Store) list(ctx context.Context, owner string, projects []string, offset, limit int) ([]agent.Conversation, int, error) {
	db := s.r.WithContext(ctx)
	var total int64
	where, args := "", []any{}
	if owner != "" {
		w, wargs := reachWhere("", owner, projects)
		where, args = " WHERE "+w, wargs
	}
	if err := db.Raw("SELECT COUNT(*) FROM conversation"+where, args...).Row().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: conversations: %w", err)
	}
	q := "SELECT " + listColumns + " FROM conversation" + where + " ORDER BY archived, pinned DESC, updated_at DESC, id DESC"
	switch {
	case limit > 0:
		q += " LIMIT ? OFFSET ?"
		args = append(args, limit, max(offset, 0))
	case offset > 0:
		q += " OFFSET ?"
		if !s.postgres {
			q = strings.Replace(q, " OFFSET", " LIMIT -1 OFFSET", 1) // SQLite needs a LIMIT first
		}
		args = append(args, offset)
	}
	rows, err := db.Raw(q, args...).Rows()
	if err != nil {
		return nil, 0, fmt.Errorf("store: conversations: %w", err)
	}
	defer rows.Close()
	out := make([]agent.Conversation, 0, max(limit, 0))
	for rows.Next() {
		var c agent.Conversation
		var waiting, slug, parentID, parentCall string
		if err := rows.Scan(&c.ID, &c.Title, &c.CreatedAt, &c.UpdatedAt, &c.MessageCount, &c.Running, &c.TurnSeq, &c.Queued, &waiting, &c.Owner, &slug, &parentID, &parentCall, &c.Pinned, &c.Archived, &c.Project); err != nil {
			return nil, 0, fmt.Errorf("store: conversations: %w", err)
		}
		c.Waiting = waitingIDs(waiting)                          // lists mark the ones waiting for a person
		c.Agent, c.Parent = slug, parentOf(parentID, parentCall) // lists filter by agent
		c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
		if s.temp != nil {
			c.Temp, c.APIRequest = true, s.temp.apiRequest(c.ID)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: conversations: %w", err)
	}
	return out, int(total), nil
}

// OrphanedTurns claims and returns the conversations whose turn no live
// process owns, longest running first, plus the running turns this Store
// started: only the caller knows which of those still run (a turn whose
// last write failed does not). On SQLite one process owns the file, so
// every turn another Store (an earlier process) started is orphaned. On
// PostgreSQL an instance holds the advisory lock ownerLock(instance) on its
// listener connection while it lives: a turn whose owner's lock can be
// taken is orphaned. Claiming moves the turn to this instance with a
// conditional update, so two instances never recover the same turn.
func (s *Store) OrphanedTurns(ctx context.Context) ([]agent.Conversation, error) {
	var rows []conversationRow
	if err := s.r.WithContext(ctx).Where("running = ?", true).
		Order("running_since, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: orphaned turns: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	dead := map[string]bool{}
	if s.postgres {
		err := s.w.WithContext(ctx).Connection(func(tx *gorm.DB) error {
			for _, r := range rows {
				if _, seen := dead[r.TurnOwner]; seen {
					continue
				}
				if r.TurnOwner == "" || r.TurnOwner == s.instance {
					// No owner: dead. This Store: alive, but only its caller
					// knows whether the turn still runs (see the doc).
					dead[r.TurnOwner] = true
					continue
				}
				var free bool
				ns, key := ownerLock(r.TurnOwner)
				if err := tx.Raw("SELECT pg_try_advisory_lock(?, ?)", ns, key).Scan(&free).Error; err != nil {
					return err
				}
				if free {
					if err := tx.Exec("SELECT pg_advisory_unlock(?, ?)", ns, key).Error; err != nil {
						return err
					}
				}
				dead[r.TurnOwner] = free
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: orphaned turns: %w", err)
		}
	}
	var out []conversationRow
	for _, r := range rows {
		if s.postgres && !dead[r.TurnOwner] {
			continue
		}
		res := s.w.WithContext(ctx).Model(&conversationRow{}).
			Where("id = ? AND running = ? AND turn_owner = ?", r.ID, true, r.TurnOwner).
			UpdateColumn("turn_owner", s.instance) // not a change users see: updated_at stays
		if res.Error != nil {
			return nil, fmt.Errorf("store: claim turn %s: %w", r.ID, res.Error)
		}
		if res.RowsAffected == 1 {
			out = append(out, r)
		}
	}
	return conversations(out), nil
}

// ownerLock is the two-key advisory lock an instance holds while it lives
// (a key space apart from the one-key locks of seqs and migrations).
func ownerLock(instance string) (ns, key int32) {
	h := fnv.New32a()
	h.Write([]byte(instance))
	return 0x61676b, int32(h.Sum32())
}

// exists reports whether conversation id is stored.
func (s *Store) exists(ctx context.Context, id string) (bool, error) {
	var n int64
	if err := s.r.WithContext(ctx).Model(&conversationRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return false, err
	}
	return n > 0, nil
}
