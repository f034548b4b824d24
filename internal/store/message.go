package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// Messages returns a page of a conversation's history in seq order: seq >
// q.After, then q.Offset skipped, at most q.Limit (≤ 0: no limit). An
// unknown conversation is agent.ErrNotFound.
func (s *Store) Messages(ctx context.Context, q agent.MessageQuery) ([]agent.Message, error) {
	if !textOK(q.ConversationID) {
		return nil, fmt.Errorf("store: messages: %w", missing("conversation", q.ConversationID))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
	}
	var payloads []string
	if err := s.r.WithContext(ctx).Model(&messageRow{}).
		Where("conversation_id = ? AND seq > ?", q.ConversationID, q.After).
		Order("seq").Offset(max(q.Offset, 0)).Limit(limit).
		Pluck("payload", &payloads).Error; err != nil {
		return nil, fmt.Errorf("store: messages: %w", err)
	}
	if len(payloads) == 0 {
		if err := s.mustExist(ctx, q.ConversationID); err != nil {
			return nil, fmt.Errorf("store: messages: %w", err)
		}
	}
	out := make([]agent.Message, len(payloads))
	for i, p := range payloads {
		if err := json.Unmarshal([]byte(p), &out[i]); err != nil {
			return nil, fmt.Errorf("store: messages of %s: decode: %w", q.ConversationID, err)
		}
	}
	return out, nil
}

// MessageByClientID returns the user message sent with clientID, or
// agent.ErrNotFound.
func (s *Store) MessageByClientID(ctx context.Context, conversationID, clientID string) (agent.Message, error) {
	if !textOK(conversationID) || !textOK(clientID) {
		return agent.Message{}, fmt.Errorf("store: message by client_id: %w", missing("client_id", clientID))
	}
	var row messageRow
	if err := s.r.WithContext(ctx).Take(&row, "conversation_id = ? AND client_id = ?", conversationID, clientID).Error; err != nil {
		return agent.Message{}, fmt.Errorf("store: message by client_id: %w", notFound(err, "client_id", clientID))
	}
	var m agent.Message
	if err := json.Unmarshal([]byte(row.Payload), &m); err != nil {
		return agent.Message{}, fmt.Errorf("store: message %s: decode: %w", row.ID, err)
	}
	return m, nil
}

// Memory returns a conversation's working memory in order. An unknown
// conversation is agent.ErrNotFound.
func (s *Store) Memory(ctx context.Context, conversationID string) ([]agent.ModelMessage, error) {
	if !textOK(conversationID) {
		return nil, fmt.Errorf("store: memory: %w", missing("conversation", conversationID))
	}
	// The mark, then the rows: whoever reads memory holds the conversation
	// (a turn, a compaction), and nothing marks it stale while a turn runs.
	var stale bool
	if err := s.readRow(ctx, "SELECT memory_stale FROM conversation WHERE id = ?", conversationID).Scan(&stale); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = gorm.ErrRecordNotFound
		}
		return nil, fmt.Errorf("store: memory: %w", notFound(err, "conversation", conversationID))
	}
	if stale {
		return nil, fmt.Errorf("store: memory of %s: %w", conversationID, agent.ErrStaleMemory)
	}
	payloads, err := s.memoryPayloads(ctx, conversationID)
	if err != nil {
		return nil, fmt.Errorf("store: memory: %w", err)
	}
	out := make([]agent.ModelMessage, len(payloads))
	for i, p := range payloads {
		if err := json.Unmarshal([]byte(p), &out[i]); err != nil {
			return nil, fmt.Errorf("store: memory of %s: decode: %w", conversationID, err)
		}
	}
	return out, nil
}

func (s *Store) mustExist(ctx context.Context, id string) error {
	ok, err := s.exists(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return agent.Errorf(agent.CodeNotFound, "conversation %q not found", shortID(id))
	}
	return nil
}

// memoryPayloads reads a conversation's working-memory rows in order.
func (s *Store) memoryPayloads(ctx context.Context, conversationID string) ([]string, error) {
	rows, err := s.readRows(ctx, "SELECT payload FROM working_memory WHERE conversation_id = ? ORDER BY order_idx", conversationID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
