package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.ScheduleStore = (*Store)(nil)

// scheduleRow is a schedule (agent.Schedule). Times are unix nanoseconds
// (slots: seconds), so they compare exactly on both databases.
type scheduleRow struct {
	ID             string `gorm:"primaryKey"`
	Owner          string `gorm:"not null;index"`
	OwnerRole      string `gorm:"not null;default:''"`
	Agent          string `gorm:"not null;default:''"`
	Prompt         string `gorm:"not null"`
	RRule          string `gorm:"column:rrule;not null;default:''"`
	Cron           string `gorm:"not null;default:''"`
	Timezone       string `gorm:"not null"`
	ConversationID string `gorm:"not null;default:''"`
	Missed         string `gorm:"not null"`
	Enabled        bool   `gorm:"not null"`
	CreatedAt      int64  `gorm:"not null;autoCreateTime:false"`
	Cursor         int64  `gorm:"column:slot_cursor;not null"`
}

func (scheduleRow) TableName() string { return "schedule" }

// scheduleRunRow is one claimed slot: its primary key is the claim.
type scheduleRunRow struct {
	ScheduleID     string `gorm:"primaryKey"`
	Slot           int64  `gorm:"primaryKey;autoIncrement:false"` // unix seconds
	ConversationID string `gorm:"not null;default:''"`
	Outcome        string `gorm:"not null;index"`
	Error          string `gorm:"not null;default:''"`
	ClaimedAt      int64  `gorm:"not null"`
}

func (scheduleRunRow) TableName() string { return "schedule_run" }

// scheduleTables are init's migration of schedules.
var scheduleTables = []any{&scheduleRow{}, &scheduleRunRow{}}

func toScheduleRow(s agent.Schedule) scheduleRow {
	return scheduleRow{ID: s.ID, Owner: s.Owner, OwnerRole: s.OwnerRole, Agent: s.Agent, Prompt: s.Prompt, RRule: s.RRule, Cron: s.Cron,
		Timezone: s.Timezone, ConversationID: s.ConversationID, Missed: s.Missed, Enabled: s.Enabled,
		CreatedAt: s.CreatedAt.UnixNano(), Cursor: s.Cursor.UnixNano()}
}

func (r scheduleRow) schedule() agent.Schedule {
	return agent.Schedule{ID: r.ID, Owner: r.Owner, OwnerRole: r.OwnerRole, Agent: r.Agent, Prompt: r.Prompt, RRule: r.RRule, Cron: r.Cron,
		Timezone: r.Timezone, ConversationID: r.ConversationID, Missed: r.Missed, Enabled: r.Enabled,
		CreatedAt: time.Unix(0, r.CreatedAt).UTC(), Cursor: time.Unix(0, r.Cursor).UTC()}
}

func (r scheduleRunRow) run() agent.ScheduleRun {
	return agent.ScheduleRun{ScheduleID: r.ScheduleID, Slot: time.Unix(r.Slot, 0).UTC(), ConversationID: r.ConversationID,
		Outcome: r.Outcome, Error: r.Error, ClaimedAt: time.Unix(0, r.ClaimedAt)}
}

// PutSchedule implements agent.ScheduleStore (insert or replace; the
// cursor never moves back).
func (s *Store) PutSchedule(ctx context.Context, sc agent.Schedule) error {
	row := toScheduleRow(sc)
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"agent", "prompt", "rrule", "cron", "timezone", "conversation_id",
			"missed", "enabled", "slot_cursor"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store: put schedule: %w", err)
	}
	return nil
}

// Schedules implements agent.ScheduleStore.
func (s *Store) Schedules(ctx context.Context, owner string) ([]agent.Schedule, error) {
	q := s.r.WithContext(ctx)
	if owner != "" {
		q = q.Where("owner = ?", owner)
	}
	var rows []scheduleRow
	if err := q.Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: schedules: %w", err)
	}
	out := make([]agent.Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.schedule()
	}
	return out, nil
}

// Schedule implements agent.ScheduleStore.
func (s *Store) Schedule(ctx context.Context, id string) (agent.Schedule, error) {
	var row scheduleRow
	err := s.r.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.Schedule{}, agent.Errorf(agent.CodeNotFound, "no schedule %q", agent.Shorten(id, 60))
	}
	if err != nil {
		return agent.Schedule{}, fmt.Errorf("store: schedule: %w", err)
	}
	return row.schedule(), nil
}

// DeleteSchedule implements agent.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("schedule_id = ?", id).Delete(&scheduleRunRow{}).Error; err != nil {
			return fmt.Errorf("store: delete schedule runs: %w", err)
		}
		if err := tx.Where("id = ?", id).Delete(&scheduleRow{}).Error; err != nil {
			return fmt.Errorf("store: delete schedule: %w", err)
		}
		return nil
	})
}

// AdvanceSchedule implements agent.ScheduleStore.
func (s *Store) AdvanceSchedule(ctx context.Context, id string, cursor time.Time) error {
	err := s.w.WithContext(ctx).Model(&scheduleRow{}).Where("id = ? AND slot_cursor < ?", id, cursor.UnixNano()).
		Update("slot_cursor", cursor.UnixNano()).Error
	if err != nil {
		return fmt.Errorf("store: advance schedule: %w", err)
	}
	return nil
}

// ClaimSlot implements agent.ScheduleStore: an insert that does nothing
// when the (schedule, slot) row exists, here or from another instance.
func (s *Store) ClaimSlot(ctx context.Context, run agent.ScheduleRun) (bool, error) {
	row := scheduleRunRow{ScheduleID: run.ScheduleID, Slot: run.Slot.Unix(), ConversationID: run.ConversationID,
		Outcome: run.Outcome, Error: run.Error, ClaimedAt: run.ClaimedAt.UnixNano()}
	res := s.w.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, fmt.Errorf("store: claim slot: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// UpdateRun implements agent.ScheduleStore.
func (s *Store) UpdateRun(ctx context.Context, run agent.ScheduleRun) error {
	err := s.w.WithContext(ctx).Model(&scheduleRunRow{}).Where("schedule_id = ? AND slot = ?", run.ScheduleID, run.Slot.Unix()).
		Updates(map[string]any{"conversation_id": run.ConversationID, "outcome": run.Outcome, "error": run.Error}).Error
	if err != nil {
		return fmt.Errorf("store: update schedule run: %w", err)
	}
	return nil
}

// LeaseRun implements agent.ScheduleStore.
func (s *Store) LeaseRun(ctx context.Context, run agent.ScheduleRun, old, now time.Time) (bool, error) {
	res := s.w.WithContext(ctx).Model(&scheduleRunRow{}).
		Where("schedule_id = ? AND slot = ? AND outcome = ? AND claimed_at = ?", run.ScheduleID, run.Slot.Unix(), agent.RunClaimed, old.UnixNano()).
		Update("claimed_at", now.UnixNano())
	if res.Error != nil {
		return false, fmt.Errorf("store: lease schedule run: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ScheduleRuns implements agent.ScheduleStore.
func (s *Store) ScheduleRuns(ctx context.Context, id string) ([]agent.ScheduleRun, error) {
	var rows []scheduleRunRow
	if err := s.r.WithContext(ctx).Where("schedule_id = ?", id).Order("slot").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: schedule runs: %w", err)
	}
	out := make([]agent.ScheduleRun, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}

// StaleRuns implements agent.ScheduleStore.
func (s *Store) StaleRuns(ctx context.Context, before time.Time) ([]agent.ScheduleRun, error) {
	var rows []scheduleRunRow
	err := s.r.WithContext(ctx).Where("outcome = ? AND claimed_at < ?", agent.RunClaimed, before.UnixNano()).Order("slot").Limit(100).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: stale schedule runs: %w", err)
	}
	out := make([]agent.ScheduleRun, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}
