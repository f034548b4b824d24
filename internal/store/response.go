package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// responseRow is one agent.StoredResponse: an OpenAI Responses id and the
// part of its conversation's log it is. Deleting the conversation deletes
// it.
type responseRow struct {
	ID             string           `gorm:"primaryKey"`
	ConversationID string           `gorm:"not null;index"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	After          int64            `gorm:"not null"`
	CreatedAt      time.Time        `gorm:"not null"`
	Request        string           `gorm:"type:text;not null"`
}

func (responseRow) TableName() string { return "response" }

// PutResponse stores a response id. Its conversation must exist.
func (s *Store) PutResponse(ctx context.Context, r agent.StoredResponse) error {
	row := responseRow{ID: r.ID, ConversationID: r.ConversationID, After: r.After, CreatedAt: r.CreatedAt.UTC(), Request: string(r.Request)}
	if err := s.w.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: put response: %w", err)
	}
	return nil
}

// Response returns a stored response, or agent.ErrNotFound.
func (s *Store) Response(ctx context.Context, id string) (agent.StoredResponse, error) {
	var row responseRow
	err := s.r.WithContext(ctx).Take(&row, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.StoredResponse{}, agent.Errorf(agent.CodeNotFound, "response %q not found", agent.Shorten(id, 80))
	}
	if err != nil {
		return agent.StoredResponse{}, fmt.Errorf("store: response: %w", err)
	}
	return agent.StoredResponse{ID: row.ID, ConversationID: row.ConversationID, After: row.After, CreatedAt: row.CreatedAt, Request: []byte(row.Request)}, nil
}

// DeleteResponse forgets a response id (its conversation keeps the turn);
// agent.ErrNotFound when there is none.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	res := s.w.WithContext(ctx).Where("id = ?", id).Delete(&responseRow{})
	if res.Error != nil {
		return fmt.Errorf("store: delete response: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return agent.Errorf(agent.CodeNotFound, "response %q not found", agent.Shorten(id, 80))
	}
	return nil
}
