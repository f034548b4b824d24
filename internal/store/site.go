package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.SiteStore = (*Store)(nil)

// siteRow is one setting an admin made in the admin panel
// (agent/site.go): its key and its value as JSON.
type siteRow struct {
	Name      string    `gorm:"primaryKey"`
	Value     string    `gorm:"not null"`
	UpdatedAt time.Time `gorm:"not null"`
}

func (siteRow) TableName() string { return "site_setting" }

// siteTables are init's migration of the admin panel's settings.
var siteTables = []any{&siteRow{}}

// sitePrefix starts the payload of a settings change on PostgreSQL:
// "site <instance>" (notify.go's channel). The settings are a side table
// outside the event log, so a change tells the other instances, which
// read the settings again (OnSite).
const sitePrefix = "site "

// SiteSettings implements agent.SiteStore: every setting, by key.
func (s *Store) SiteSettings(ctx context.Context) (map[string]string, error) {
	var rows []siteRow
	if err := s.r.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: site settings: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Value
	}
	return out, nil
}

// PutSiteSetting implements agent.SiteStore: it sets key to value (JSON),
// or deletes it when value is "", and tells the other instances.
func (s *Store) PutSiteSetting(ctx context.Context, key, value string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if value == "" {
			if err := tx.Delete(&siteRow{}, "name = ?", key).Error; err != nil {
				return err
			}
		} else if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "name"}},
			DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
		}).Create(&siteRow{Name: key, Value: value, UpdatedAt: s.now()}).Error; err != nil {
			return err
		}
		if !s.postgres {
			return nil
		}
		return tx.Exec("SELECT pg_notify(?, ?)", s.channel, sitePrefix+s.instance).Error
	})
	if err != nil {
		return fmt.Errorf("store: put site setting: %w", err)
	}
	return nil
}

// parseSiteNotice reads a settings change notice: the instance that made it.
func parseSiteNotice(payload string) (instance string, ok bool) {
	return strings.CutPrefix(payload, sitePrefix)
}

// OnSite sets what the listener calls, on PostgreSQL, when another
// instance changed the admin panel's settings, and when it got its
// connection back (a change may have been missed). It is called on the
// listener's goroutine.
func (s *Store) OnSite(f func()) { s.onSite.Store(&f) }
