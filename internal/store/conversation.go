package store

import (
	"context"
	"fmt"

	"github.com/agentik/agentik/internal/agent"
)

func (r conversationRow) conversation() agent.Conversation {
	return agent.Conversation{
		ID:           r.ID,
		Title:        r.Title,
		CreatedAt:    r.CreatedAt.UTC(),
		UpdatedAt:    r.UpdatedAt.UTC(),
		MessageCount: r.MessageCount,
		Running:      r.Running,
		TurnSeq:      r.TurnSeq,
	}
}

func conversations(rows []conversationRow) []agent.Conversation {
	out := make([]agent.Conversation, len(rows))
	for i, r := range rows {
		out[i] = r.conversation()
	}
	return out
}

// Conversation returns one conversation, or agent.ErrNotFound.
func (s *Store) Conversation(ctx context.Context, id string) (agent.Conversation, error) {
	var row conversationRow
	if err := s.r.WithContext(ctx).Take(&row, "id = ?", id).Error; err != nil {
		return agent.Conversation{}, fmt.Errorf("store: conversation: %w", notFound(err, "conversation", id))
	}
	return row.conversation(), nil
}

// Conversations returns a page, most recently updated first (ties by id,
// descending), and the total count. limit ≤ 0 means no limit.
func (s *Store) Conversations(ctx context.Context, offset, limit int) ([]agent.Conversation, int, error) {
	db := s.r.WithContext(ctx)
	var total int64
	if err := db.Model(&conversationRow{}).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("store: conversations: %w", err)
	}
	if limit <= 0 {
		limit = -1
	}
	var rows []conversationRow
	if err := db.Order("updated_at DESC, id DESC").Offset(max(offset, 0)).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("store: conversations: %w", err)
	}
	return conversations(rows), int(total), nil
}

// RunningConversations returns the conversations marked running, longest
// running first: after a crash, the turns that died with the process.
func (s *Store) RunningConversations(ctx context.Context) ([]agent.Conversation, error) {
	var rows []conversationRow
	if err := s.r.WithContext(ctx).Where("running = ?", true).Order("running_since, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: running conversations: %w", err)
	}
	return conversations(rows), nil
}

// exists reports whether conversation id is stored.
func (s *Store) exists(ctx context.Context, id string) (bool, error) {
	var n int64
	if err := s.r.WithContext(ctx).Model(&conversationRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return false, err
	}
	return n > 0, nil
}
