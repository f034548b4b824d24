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

// Long-term memory (agent/memory.go): blocks per user, agent and label,
// and the log of their changes, each revertible. Not to be confused with
// working memory (memoryRow), which is one conversation's model context.

var _ agent.MemoryStore = (*Store)(nil)

// memoryBlockRow is one block's current value.
type memoryBlockRow struct {
	Owner     string `gorm:"primaryKey"`
	Agent     string `gorm:"primaryKey"`
	Label     string `gorm:"primaryKey"`
	Value     string `gorm:"not null"`
	SizeLimit int    `gorm:"not null"` // characters
	UpdatedAt int64  `gorm:"not null;autoUpdateTime:false"`
}

func (memoryBlockRow) TableName() string { return "memory_block" }

// memoryChangeRow is one change of a block (agent.MemoryChange).
type memoryChangeRow struct {
	ID             string `gorm:"primaryKey"`
	Owner          string `gorm:"not null;index:memory_change_owner,priority:1"`
	CreatedAt      int64  `gorm:"not null;autoCreateTime:false;index:memory_change_owner,priority:2"` // unix nanoseconds
	Agent          string `gorm:"not null"`
	Label          string `gorm:"not null"`
	Op             string `gorm:"not null"`
	Summary        string `gorm:"not null"`
	Value          string `gorm:"not null"`
	Previous       string `gorm:"not null"`
	SizeLimit      int    `gorm:"not null"`
	ConversationID string `gorm:"not null;default:''"`
	CallID         string `gorm:"not null;default:''"`
	Reverts        string `gorm:"not null;default:''"`
	RevertedBy     string `gorm:"not null;default:''"`
}

func (memoryChangeRow) TableName() string { return "memory_change" }

// memoryTables are init's migration of long-term memory.
var memoryTables = []any{&memoryBlockRow{}, &memoryChangeRow{}}

func (r memoryChangeRow) change() agent.MemoryChange {
	return agent.MemoryChange{ID: r.ID, Owner: r.Owner, Agent: r.Agent, Label: r.Label, Op: r.Op, Summary: r.Summary, Value: r.Value,
		Previous: r.Previous, Limit: r.SizeLimit, ConversationID: r.ConversationID, CallID: r.CallID, Reverts: r.Reverts,
		RevertedBy: r.RevertedBy, Date: time.Unix(0, r.CreatedAt).UTC()}
}

// MemoryBlocks implements agent.MemoryStore.
func (s *Store) MemoryBlocks(ctx context.Context, owner, agentSlug string) ([]agent.MemoryBlock, error) {
	var rows []memoryBlockRow
	if err := s.r.WithContext(ctx).Where("owner = ? AND agent = ?", owner, agentSlug).Order("label").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: memory blocks: %w", err)
	}
	out := make([]agent.MemoryBlock, len(rows))
	for i, r := range rows {
		out[i] = agent.MemoryBlock{Label: r.Label, Value: r.Value, Limit: r.SizeLimit}
	}
	return out, nil
}

// errMemoryChanged aborts ApplyMemory's transaction on a conflict.
var errMemoryChanged = agent.Errorf(agent.CodeConflict, "the memory block changed meanwhile")

// ApplyMemory implements agent.MemoryStore: a conditional update of the
// block (or an insert that does nothing when the row exists, for a block
// not stored yet), the change, and the reverted change's mark, in one
// transaction; a condition that fails rolls all of it back.
func (s *Store) ApplyMemory(ctx context.Context, ch agent.MemoryChange) error {
	for _, f := range [][2]string{{"agent", ch.Agent}, {"label", ch.Label}, {"value", ch.Value}, {"summary", ch.Summary}} {
		if err := checkText(f[0], f[1]); err != nil {
			return err
		}
	}
	now := ch.Date.UnixNano()
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&memoryBlockRow{}).Where("owner = ? AND agent = ? AND label = ? AND value = ?", ch.Owner, ch.Agent, ch.Label, ch.Previous).
			Updates(map[string]any{"value": ch.Value, "size_limit": ch.Limit, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			if ch.Previous != "" {
				return errMemoryChanged
			}
			row := memoryBlockRow{Owner: ch.Owner, Agent: ch.Agent, Label: ch.Label, Value: ch.Value, SizeLimit: ch.Limit, UpdatedAt: now}
			res = tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return errMemoryChanged // stored meanwhile, with something else
			}
		}
		if ch.Reverts != "" {
			res = tx.Model(&memoryChangeRow{}).Where("id = ? AND owner = ? AND reverted_by = ''", ch.Reverts, ch.Owner).Update("reverted_by", ch.ID)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return errMemoryChanged
			}
		}
		row := memoryChangeRow{ID: ch.ID, Owner: ch.Owner, CreatedAt: now, Agent: ch.Agent, Label: ch.Label, Op: ch.Op, Summary: ch.Summary,
			Value: ch.Value, Previous: ch.Previous, SizeLimit: ch.Limit, ConversationID: ch.ConversationID, CallID: ch.CallID, Reverts: ch.Reverts}
		return tx.Create(&row).Error
	})
	if errors.Is(err, errMemoryChanged) {
		return err
	}
	if err != nil {
		return fmt.Errorf("store: apply memory: %w", err)
	}
	return nil
}

// MemoryChange implements agent.MemoryStore.
func (s *Store) MemoryChange(ctx context.Context, owner, id string) (agent.MemoryChange, error) {
	var row memoryChangeRow
	if !textOK(id) {
		return agent.MemoryChange{}, missing("memory change", id)
	}
	err := s.r.WithContext(ctx).Where("id = ? AND owner = ?", id, owner).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.MemoryChange{}, agent.Errorf(agent.CodeNotFound, "no memory change %q", agent.Shorten(id, 60))
	}
	if err != nil {
		return agent.MemoryChange{}, fmt.Errorf("store: memory change: %w", err)
	}
	return row.change(), nil
}

// MemoryChanges implements agent.MemoryStore.
func (s *Store) MemoryChanges(ctx context.Context, owner, agentSlug string, limit int) ([]agent.MemoryChange, error) {
	q := s.r.WithContext(ctx).Where("owner = ?", owner)
	if agentSlug != "" {
		q = q.Where("agent = ?", agentSlug)
	}
	var rows []memoryChangeRow
	if err := q.Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: memory changes: %w", err)
	}
	out := make([]agent.MemoryChange, len(rows))
	for i, r := range rows {
		out[i] = r.change()
	}
	return out, nil
}

// deleteMemoryOf removes a user's memory (DeleteUser).
func deleteMemoryOf(tx *gorm.DB, owner string) error {
	if err := tx.Where("owner = ?", owner).Delete(&memoryBlockRow{}).Error; err != nil {
		return err
	}
	return tx.Where("owner = ?", owner).Delete(&memoryChangeRow{}).Error
}
