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

var _ agent.AuditStore = (*Store)(nil)

// auditRow is one entry of the audit log (agent/audit.go), kept apart
// from the event log: its seq is its own, its TTL AGENTIK_AUDIT_TTL.
type auditRow struct {
	Seq          int64     `gorm:"primaryKey;autoIncrement:false"`
	At           time.Time `gorm:"not null;index"`
	Actor        string    `gorm:"not null;index"`
	Action       string    `gorm:"not null;index"`
	Target       string    `gorm:"not null"`
	FromAddress  string    `gorm:"not null"`
	FromProtocol string    `gorm:"not null"`
	Details      string    `gorm:"not null"`
	PrevHash     string    `gorm:"not null"`
	Hash         string    `gorm:"not null"`
}

func (auditRow) TableName() string { return "audit" }

// auditTables are the audit log's tables, for init's migration.
var auditTables = []any{&auditRow{}}

func (r auditRow) entry() agent.AuditEntry {
	e := agent.AuditEntry{Seq: r.Seq, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, Target: r.Target,
		From: agent.Origin{Address: r.FromAddress, Protocol: r.FromProtocol}, PrevHash: r.PrevHash, Hash: r.Hash}
	if r.Details != "" {
		e.Details = json.RawMessage(r.Details)
	}
	return e
}

// appendTries is how often AppendAudit tries when another instance took
// the same seq first.
const appendTries = 8

// AppendAudit implements agent.AuditStore: the last entry is read and the
// next written in one transaction; another instance's entry written in
// between takes the seq first (the primary key), and this one tries again
// after it.
func (s *Store) AppendAudit(ctx context.Context, e agent.AuditEntry) (agent.AuditEntry, error) {
	e.At = e.At.UTC().Truncate(time.Microsecond)
	var err error
	for range appendTries {
		err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var last auditRow
			switch err := tx.Order("seq DESC").Limit(1).Take(&last).Error; {
			case errors.Is(err, gorm.ErrRecordNotFound):
				e.Seq, e.PrevHash = 1, ""
			case err != nil:
				return err
			default:
				e.Seq, e.PrevHash = last.Seq+1, last.Hash
			}
			e.Hash = e.Sum()
			row := auditRow{Seq: e.Seq, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target,
				FromAddress: e.From.Address, FromProtocol: e.From.Protocol, Details: string(e.Details), PrevHash: e.PrevHash, Hash: e.Hash}
			return tx.Create(&row).Error
		})
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			break
		}
	}
	if err != nil {
		return agent.AuditEntry{}, fmt.Errorf("store: append audit: %w", err)
	}
	return e, nil
}

// AuditEntries implements agent.AuditStore.
func (s *Store) AuditEntries(ctx context.Context, q agent.AuditQuery) ([]agent.AuditEntry, error) {
	db := s.r.WithContext(ctx).Where("seq > ?", q.After)
	if q.Actor != "" {
		db = db.Where("actor = ?", q.Actor)
	}
	if q.Action != "" {
		db = db.Where("action = ?", q.Action)
	}
	if !q.From.IsZero() {
		db = db.Where("at >= ?", micro(q.From))
	}
	if !q.To.IsZero() {
		db = db.Where("at < ?", micro(q.To))
	}
	var rows []auditRow
	if err := db.Order("seq").Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: audit: %w", err)
	}
	out := make([]agent.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out, nil
}

// PruneAudit implements agent.AuditStore.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res := s.w.WithContext(ctx).Where("at < ?", micro(before)).Delete(&auditRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("store: prune audit: %w", res.Error)
	}
	return res.RowsAffected, nil
}
