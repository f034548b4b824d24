package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

// Cursor returns the value a durable reader of the event log (a webhook
// deliverer) stored under key, or agent.ErrNotFound. Keys live in the meta
// table beside the epoch; callers prefix theirs ("webhook:…").
func (s *Store) Cursor(ctx context.Context, key string) (string, error) {
	var m metaRow
	err := s.r.WithContext(ctx).Take(&m, "key = ?", key).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", fmt.Errorf("store: cursor %q: %w", key, agent.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: cursor: %w", err)
	}
	return m.Value, nil
}

// SetCursor stores value under key, replacing what was there.
func (s *Store) SetCursor(ctx context.Context, key, value string) error {
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value"}),
	}).Create(&metaRow{Key: key, Value: value}).Error
	if err != nil {
		return fmt.Errorf("store: set cursor: %w", err)
	}
	return nil
}
