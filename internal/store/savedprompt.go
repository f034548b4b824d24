package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

// Saved prompts (agent/savedprompt.go) are a side table, written outside
// the event log.

var _ agent.SavedPromptStore = (*Store)(nil)

// promptRow is a saved prompt; Project is "" when it is not shared.
type promptRow struct {
	ID        string `gorm:"primaryKey"`
	Owner     string `gorm:"not null;index"`
	Name      string `gorm:"not null"`
	Text      string `gorm:"type:text;not null"`
	Project   string `gorm:"not null;default:'';index"`
	CreatedAt int64  `gorm:"not null;autoCreateTime:false"` // unix nanoseconds
	UpdatedAt int64  `gorm:"not null;autoUpdateTime:false"`
}

func (promptRow) TableName() string { return "saved_prompt" }

// promptTables are init's migration of saved prompts and preferences
// (preference.go).
var promptTables = []any{&promptRow{}, &preferenceRow{}}

func (r promptRow) prompt() agent.SavedPrompt {
	return agent.SavedPrompt{ID: r.ID, Owner: r.Owner, Name: r.Name, Text: r.Text, Project: r.Project,
		CreatedAt: time.Unix(0, r.CreatedAt).UTC(), UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()}
}

// PutSavedPrompt implements agent.SavedPromptStore.
func (s *Store) PutSavedPrompt(ctx context.Context, p agent.SavedPrompt) error {
	for _, f := range [][2]string{{"id", p.ID}, {"owner", p.Owner}, {"name", p.Name}, {"text", p.Text}, {"project", p.Project}} {
		if err := checkText(f[0], f[1]); err != nil {
			return err
		}
	}
	row := promptRow{ID: p.ID, Owner: p.Owner, Name: p.Name, Text: p.Text, Project: p.Project,
		CreatedAt: p.CreatedAt.UnixNano(), UpdatedAt: p.UpdatedAt.UnixNano()}
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"name", "text", "project", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store: put prompt: %w", err)
	}
	return nil
}

// SavedPrompt implements agent.SavedPromptStore.
func (s *Store) SavedPrompt(ctx context.Context, id string) (agent.SavedPrompt, error) {
	if !textOK(id) {
		return agent.SavedPrompt{}, fmt.Errorf("store: prompt: %w", missing("prompt", id))
	}
	var row promptRow
	if err := s.r.WithContext(ctx).Take(&row, "id = ?", id).Error; err != nil {
		return agent.SavedPrompt{}, fmt.Errorf("store: prompt: %w", notFound(err, "prompt", id))
	}
	return row.prompt(), nil
}

// SavedPrompts implements agent.SavedPromptStore.
func (s *Store) SavedPrompts(ctx context.Context, owner string, projects []string) ([]agent.SavedPrompt, error) {
	db := s.r.WithContext(ctx)
	if len(projects) > 0 {
		db = db.Where("owner = ? OR project IN ?", owner, projects)
	} else {
		db = db.Where("owner = ?", owner)
	}
	var rows []promptRow
	if err := db.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: prompts: %w", err)
	}
	out := make([]agent.SavedPrompt, len(rows))
	for i, r := range rows {
		out[i] = r.prompt()
	}
	agent.SortSavedPrompts(out)
	return out, nil
}

// CountSavedPrompts implements agent.SavedPromptStore.
func (s *Store) CountSavedPrompts(ctx context.Context, owner string) (int, error) {
	var n int64
	if err := s.r.WithContext(ctx).Model(&promptRow{}).Where("owner = ?", owner).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("store: count prompts: %w", err)
	}
	return int(n), nil
}

// DeleteSavedPrompt implements agent.SavedPromptStore.
func (s *Store) DeleteSavedPrompt(ctx context.Context, id string) error {
	if err := s.w.WithContext(ctx).Where("id = ?", id).Delete(&promptRow{}).Error; err != nil {
		return fmt.Errorf("store: delete prompt: %w", err)
	}
	return nil
}
