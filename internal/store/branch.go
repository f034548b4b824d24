package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentik/agentik/internal/agent"
	"gorm.io/gorm"
)

// Branches (agent/branch.go). message.parent_id is the message a row
// follows ("" for a first message); rows from before branches have NULL
// there and follow the previous message in seq order: nothing is rewritten
// on upgrade. conversation.head is the active leaf; NULL (a conversation
// from before branches, or one without messages) means its last message.
// Inserting a message without a parent makes it follow the head and
// become the head, in the writer's transaction, so a turn's messages
// always extend the active path.

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// needsParent reports whether rec writes a message that follows the head.
func needsParent(rec *agent.Record) bool {
	e := rec.Event.Event
	return e != nil && e.Type == agent.EventMessage && e.Message != nil && e.Message.ParentID == ""
}

// encode re-encodes rec's event (its message gained its parent): the
// stored row and the bytes published are the same encoding.
func (s *Store) encode(rec *agent.Record, row eventRow) (eventRow, agent.Encoded, error) {
	enc, err := agent.EncodeRef(&rec.Event)
	if err != nil {
		return row, agent.Encoded{}, agent.Errorf(agent.CodeBadRequest, "event %s: %v", rec.Event.ID, err)
	}
	row.Payload = string(enc.JSON)
	return row, enc, nil
}

// head is conversation cid's head, in tx.
func head(tx *gorm.DB, cid string) (string, error) {
	var h sql.NullString
	if err := rawRow(tx, "SELECT head FROM conversation WHERE id = ?", cid).Scan(&h); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
		}
		return "", fmt.Errorf("head of %s: %w", cid, err)
	}
	if h.Valid {
		return h.String, nil
	}
	var last []string
	if err := tx.Model(&messageRow{}).Where("conversation_id = ?", cid).Order("seq DESC").Limit(1).Pluck("id", &last).Error; err != nil {
		return "", fmt.Errorf("head of %s: %w", cid, err)
	}
	if len(last) == 0 {
		return "", nil
	}
	return last[0], nil
}

// moveHead sets conversation cid's head to id, a message of it or "";
// refused with busy while a turn runs, unless this record starts one.
func moveHead(tx *gorm.DB, cid, id string, starts bool) error {
	var row conversationRow
	if err := tx.Select("id", "running").Take(&row, "id = ?", cid).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
		}
		return fmt.Errorf("move head of %s: %w", cid, err)
	}
	if row.Running && !starts {
		return agent.Errorf(agent.CodeBusy, "a turn is running in conversation %s; wait for it to end or interrupt it", cid)
	}
	if id != "" {
		var n int64
		if err := tx.Model(&messageRow{}).Where("id = ? AND conversation_id = ?", id, cid).Count(&n).Error; err != nil {
			return fmt.Errorf("move head of %s: %w", cid, err)
		}
		if n == 0 {
			return agent.Errorf(agent.CodeNotFound, "message %q not found in conversation %s", id, cid)
		}
	}
	return updateConversation(tx, cid, map[string]any{"head": id})
}

// Tree returns conversation id's messages as nodes in seq order, and its
// head (see agent.Brancher).
func (s *Store) Tree(ctx context.Context, id string) ([]agent.Node, string, error) {
	if !textOK(id) {
		return nil, "", fmt.Errorf("store: tree: %w", missing("conversation", id))
	}
	var conv conversationRow
	if err := s.r.WithContext(ctx).Select("id", "head").Take(&conv, "id = ?", id).Error; err != nil {
		return nil, "", fmt.Errorf("store: tree: %w", notFound(err, "conversation", id))
	}
	// Read row by row: a 1000-message tree is read on every branch switch.
	// octet_length reads a value's size without reading the value, on
	// SQLite (3.43+) and on PostgreSQL (a TOASTed text is not fetched).
	rows, err := s.r.WithContext(ctx).Model(&messageRow{}).Select("id, parent_id, seq, type, octet_length(payload)").
		Where("conversation_id = ?", id).Order("seq").Rows()
	if err != nil {
		return nil, "", fmt.Errorf("store: tree: %w", err)
	}
	defer rows.Close()
	var nodes []agent.Node
	prev := ""
	for rows.Next() {
		var n agent.Node
		var parent sql.NullString
		if err := rows.Scan(&n.ID, &parent, &n.Seq, &n.Type, &n.Size); err != nil {
			return nil, "", fmt.Errorf("store: tree: %w", err)
		}
		n.Parent = prev
		if parent.Valid {
			n.Parent = parent.String
		}
		nodes = append(nodes, n)
		prev = n.ID
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: tree: %w", err)
	}
	h := prev
	if conv.Head != nil {
		h = *conv.Head
	}
	return nodes, h, nil
}

// MessagesByID returns conversation id's messages with these ids, in seq
// order.
func (s *Store) MessagesByID(ctx context.Context, id string, ids []string) ([]agent.Message, error) {
	out := make([]agent.Message, 0, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(idChunk, len(ids))]
		ids = ids[len(chunk):]
		var payloads []string
		if err := s.r.WithContext(ctx).Model(&messageRow{}).
			Where("conversation_id = ? AND id IN ?", id, chunk).Order("seq").
			Pluck("payload", &payloads).Error; err != nil {
			return nil, fmt.Errorf("store: messages by id: %w", err)
		}
		for _, p := range payloads {
			var m agent.Message
			if err := json.Unmarshal([]byte(p), &m); err != nil {
				return nil, fmt.Errorf("store: messages of %s: decode: %w", id, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// SystemMemory returns the first entry of conversation id's working memory
// when it is the system prompt.
func (s *Store) SystemMemory(ctx context.Context, id string) (agent.ModelMessage, bool, error) {
	var payloads []string
	if err := s.r.WithContext(ctx).Model(&memoryRow{}).Where("conversation_id = ?", id).
		Order("order_idx").Limit(1).Pluck("payload", &payloads).Error; err != nil {
		return agent.ModelMessage{}, false, fmt.Errorf("store: system memory: %w", err)
	}
	if len(payloads) == 0 {
		return agent.ModelMessage{}, false, nil
	}
	var m agent.ModelMessage
	if err := json.Unmarshal([]byte(payloads[0]), &m); err != nil {
		return agent.ModelMessage{}, false, fmt.Errorf("store: memory of %s: decode: %w", id, err)
	}
	return m, m.Role == agent.RoleSystem, nil
}
