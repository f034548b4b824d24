package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

// Preferences (agent/preference.go) are a side table, one row per person,
// written outside the event log; migrated with the saved prompts
// (savedprompt.go promptTables).

var _ agent.PreferenceStore = (*Store)(nil)

// preferenceRow is one person's preferences.
type preferenceRow struct {
	UserID    string `gorm:"primaryKey"`
	Theme     string `gorm:"not null;default:''"`
	Model     string `gorm:"not null;default:''"`
	Locale    string `gorm:"not null;default:''"`
	UpdatedAt int64  `gorm:"not null;autoUpdateTime:false"` // unix nanoseconds
}

func (preferenceRow) TableName() string { return "preference" }

// Preferences implements agent.PreferenceStore.
func (s *Store) Preferences(ctx context.Context, user string) (agent.Preferences, error) {
	var rows []preferenceRow
	if err := s.r.WithContext(ctx).Where("user_id = ?", user).Limit(1).Find(&rows).Error; err != nil {
		return agent.Preferences{}, fmt.Errorf("store: preferences: %w", err)
	}
	if len(rows) == 0 {
		return agent.Preferences{}, nil
	}
	r := rows[0]
	return agent.Preferences{Theme: r.Theme, Model: r.Model, Locale: r.Locale, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()}, nil
}

// PutPreferences implements agent.PreferenceStore.
func (s *Store) PutPreferences(ctx context.Context, user string, p agent.Preferences) error {
	for _, f := range [][2]string{{"user", user}, {"theme", p.Theme}, {"model", p.Model}, {"locale", p.Locale}} {
		if err := checkText(f[0], f[1]); err != nil {
			return err
		}
	}
	row := preferenceRow{UserID: user, Theme: p.Theme, Model: p.Model, Locale: p.Locale, UpdatedAt: p.UpdatedAt.UnixNano()}
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "user_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"theme", "model", "locale", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store: put preferences: %w", err)
	}
	return nil
}
