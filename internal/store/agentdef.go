package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.AgentStore = (*Store)(nil)

// agentRow is an agent's latest version; its slug is unique for good
// (a deleted agent keeps it: its conversations still name it).
type agentRow struct {
	Slug      string    `gorm:"primaryKey"`
	Version   int       `gorm:"not null"`
	Deleted   bool      `gorm:"not null;default:false"`
	Owner     string    `gorm:"not null;default:'';index"`
	Payload   string    `gorm:"type:text;not null"` // the JSON of agent.AgentDef
	UpdatedAt time.Time `gorm:"not null"`
}

func (agentRow) TableName() string { return "agent_def" }

// agentVersionRow is one version of an agent, kept for good: a turn names
// the version it ran with.
type agentVersionRow struct {
	Slug      string    `gorm:"primaryKey"`
	Version   int       `gorm:"primaryKey;autoIncrement:false"`
	Payload   string    `gorm:"type:text;not null"`
	CreatedAt time.Time `gorm:"not null"`
}

func (agentVersionRow) TableName() string { return "agent_version" }

func decodeAgent(payload string) (agent.AgentDef, error) {
	var d agent.AgentDef
	if err := json.Unmarshal([]byte(payload), &d); err != nil {
		return agent.AgentDef{}, fmt.Errorf("decode agent: %w", err)
	}
	return d, nil
}

// Agents implements agent.AgentStore.
func (s *Store) Agents(ctx context.Context) ([]agent.AgentDef, error) {
	var rows []agentRow
	if err := s.r.WithContext(ctx).Order("slug").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: agents: %w", err)
	}
	out := make([]agent.AgentDef, 0, len(rows))
	for _, r := range rows {
		d, err := decodeAgent(r.Payload)
		if err != nil {
			return nil, fmt.Errorf("store: agent %s: %w", r.Slug, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Agent implements agent.AgentStore.
func (s *Store) Agent(ctx context.Context, slug string) (agent.AgentDef, error) {
	var r agentRow
	if err := s.r.WithContext(ctx).Take(&r, "slug = ?", slug).Error; err != nil {
		return agent.AgentDef{}, fmt.Errorf("store: agent: %w", notFound(err, "agent", slug))
	}
	return decodeAgent(r.Payload)
}

// AgentVersion implements agent.AgentStore.
func (s *Store) AgentVersion(ctx context.Context, slug string, version int) (agent.AgentDef, error) {
	var r agentVersionRow
	if err := s.r.WithContext(ctx).Take(&r, "slug = ? AND version = ?", slug, version).Error; err != nil {
		return agent.AgentDef{}, fmt.Errorf("store: agent version: %w", notFound(err, "agent version", slug))
	}
	return decodeAgent(r.Payload)
}

// SaveAgent implements agent.AgentStore: the version row and the latest
// row in one transaction, the latest moved only from the version before.
// Agent definitions are not events of the log: they are written beside
// the writer, on its connection pool.
func (s *Store) SaveAgent(ctx context.Context, d agent.AgentDef) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("store: save agent: %w", err)
	}
	now := s.now()
	err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if d.Version == 1 {
			if err := tx.Create(&agentRow{Slug: d.Slug, Version: 1, Deleted: d.Deleted, Owner: d.Owner, Payload: string(b), UpdatedAt: now}).Error; err != nil {
				return err
			}
		} else {
			res := tx.Model(&agentRow{}).Where("slug = ? AND version = ?", d.Slug, d.Version-1).
				Updates(map[string]any{"version": d.Version, "deleted": d.Deleted, "owner": d.Owner, "payload": string(b), "updated_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return agent.Errorf(agent.CodeConflict, "agent %q changed meanwhile: read it again and repeat the edit", d.Slug)
			}
		}
		return tx.Create(&agentVersionRow{Slug: d.Slug, Version: d.Version, Payload: string(b), CreatedAt: now}).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return agent.Errorf(agent.CodeConflict, "slug %q is taken: choose another slug", d.Slug)
	}
	if err != nil {
		var ae *agent.Error
		if errors.As(err, &ae) {
			return err
		}
		return fmt.Errorf("store: save agent: %w", err)
	}
	return nil
}

// RenameAgent implements agent.AgentStore: the agent's rows, its new
// version, and every column that names it (conversation, schedule,
// memory_block, memory_change, other agents' delegations) in one
// transaction on the writer's pool.
func (s *Store) RenameAgent(ctx context.Context, from string, d agent.AgentDef) error {
	now := s.now()
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var versions []agentVersionRow
		if err := tx.Where("slug = ?", from).Order("version").Find(&versions).Error; err != nil {
			return err
		}
		for _, v := range versions {
			def, err := decodeAgent(v.Payload)
			if err != nil {
				return err
			}
			def.Slug = d.Slug
			b, err := json.Marshal(def)
			if err != nil {
				return err
			}
			if err := tx.Exec("UPDATE agent_version SET slug = ?, payload = ? WHERE slug = ? AND version = ?", d.Slug, string(b), from, v.Version).Error; err != nil {
				return err
			}
		}
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		res := tx.Exec("UPDATE agent_def SET slug = ?, version = ?, deleted = ?, owner = ?, payload = ?, updated_at = ? WHERE slug = ? AND version = ?",
			d.Slug, d.Version, d.Deleted, d.Owner, string(b), now, from, d.Version-1)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return agent.Errorf(agent.CodeConflict, "agent %q changed meanwhile: read it again and repeat the rename", from)
		}
		if err := tx.Create(&agentVersionRow{Slug: d.Slug, Version: d.Version, Payload: string(b), CreatedAt: now}).Error; err != nil {
			return err
		}
		for _, table := range []string{"conversation", "schedule", "memory_block", "memory_change"} {
			if err := tx.Exec("UPDATE "+table+" SET agent = ? WHERE agent = ?", d.Slug, from).Error; err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
		// Delegations: a LIKE finds the candidates ('_' matches any
		// character: a superset), RenameDelegate decides.
		var rows []agentRow
		if err := tx.Where("payload LIKE ?", "%\""+agent.DelegatePrefix+from+"\"%").Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			o, err := decodeAgent(r.Payload)
			if err != nil {
				return err
			}
			o, ok := agent.RenameDelegate(o, from, d.Slug, d.UpdatedAt)
			if !ok {
				continue
			}
			ob, err := json.Marshal(o)
			if err != nil {
				return err
			}
			res := tx.Model(&agentRow{}).Where("slug = ? AND version = ?", o.Slug, o.Version-1).
				Updates(map[string]any{"version": o.Version, "payload": string(ob), "updated_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return agent.Errorf(agent.CodeConflict, "agent %q changed meanwhile", o.Slug)
			}
			if err := tx.Create(&agentVersionRow{Slug: o.Slug, Version: o.Version, Payload: string(ob), CreatedAt: now}).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return agent.Errorf(agent.CodeConflict, "slug %q is taken: choose another slug", d.Slug)
	}
	if err != nil {
		var ae *agent.Error
		if errors.As(err, &ae) {
			return err
		}
		return fmt.Errorf("store: rename agent: %w", err)
	}
	s.version.Add(1) // conversation rows changed beside the writer (see readCache)
	return nil
}
