package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.UsageStore = (*Store)(nil)

// usageRow is the tokens one user used on one day (UTC): what budgets are
// checked against and GET /agentik/usage reads.
type usageRow struct {
	UserID           string `gorm:"primaryKey"`
	Date             string `gorm:"primaryKey;index"` // YYYY-MM-DD
	PromptTokens     int64  `gorm:"not null;default:0"`
	CompletionTokens int64  `gorm:"not null;default:0"`
}

func (usageRow) TableName() string { return "usage_day" }

// AddUsage implements agent.UsageStore: one upsert, so concurrent turns
// add up.
func (s *Store) AddUsage(ctx context.Context, user, date string, prompt, completion int64) error {
	row := usageRow{UserID: user, Date: date, PromptTokens: prompt, CompletionTokens: completion}
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "user_id"}, {Name: "date"}},
		DoUpdates: clause.Assignments(map[string]any{
			"prompt_tokens":     gorm.Expr("usage_day.prompt_tokens + ?", prompt),
			"completion_tokens": gorm.Expr("usage_day.completion_tokens + ?", completion),
		}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store: add usage: %w", err)
	}
	return nil
}

// UsageDays implements agent.UsageStore.
func (s *Store) UsageDays(ctx context.Context, user, from, to string) ([]agent.UsageDay, error) {
	q := s.r.WithContext(ctx).Where("date >= ? AND date <= ?", from, to)
	if user != "" {
		q = q.Where("user_id = ?", user)
	}
	var rows []usageRow
	if err := q.Order("date, user_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	out := make([]agent.UsageDay, len(rows))
	for i, r := range rows {
		out[i] = agent.UsageDay{Date: r.Date, UserID: r.UserID, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens}
	}
	return out, nil
}
