package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// Share links (agent/share.go) are a side table written outside the event
// log, found by the hash of their token. Deleting a conversation deletes
// its links in the same transaction (writer.go, AgentDeleted), so a link
// never outlives what it shows.

// shareRow is a share link; Hash is the SHA-256 of its token.
type shareRow struct {
	ID             string `gorm:"primaryKey"`
	Hash           string `gorm:"not null;uniqueIndex:share_hash"`
	ConversationID string `gorm:"not null;index:share_conversation"`
	Owner          string `gorm:"not null;index:share_owner"`
	Title          string `gorm:"type:text;not null;default:''"`
	Head           string `gorm:"not null"`
	Seq            int64  `gorm:"not null"`
	CreatedAt      time.Time
	ExpiresAt      *time.Time
}

func (shareRow) TableName() string { return "share" }

var shareTables = []any{&shareRow{}}

var _ agent.ShareStore = (*Store)(nil)

func (r shareRow) share() agent.Share {
	s := agent.Share{ID: r.ID, ConversationID: r.ConversationID, Owner: r.Owner, Title: r.Title, Head: r.Head, Seq: r.Seq, CreatedAt: r.CreatedAt.UTC()}
	if r.ExpiresAt != nil {
		t := r.ExpiresAt.UTC()
		s.ExpiresAt = &t
	}
	return s
}

// CreateShare implements agent.ShareStore.
func (s *Store) CreateShare(ctx context.Context, sh agent.Share, hash string) error {
	if err := checkText("title", sh.Title); err != nil {
		return err
	}
	row := shareRow{ID: sh.ID, Hash: hash, ConversationID: sh.ConversationID, Owner: sh.Owner, Title: sh.Title, Head: sh.Head, Seq: sh.Seq,
		CreatedAt: sh.CreatedAt.UTC(), ExpiresAt: sh.ExpiresAt}
	if err := s.w.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create share: %w", err)
	}
	return nil
}

func (s *Store) shareWhere(ctx context.Context, what, query string, arg any) (agent.Share, error) {
	var row shareRow
	if err := s.r.WithContext(ctx).Where(query, arg).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return agent.Share{}, missing("share", what)
		}
		return agent.Share{}, fmt.Errorf("store: share: %w", err)
	}
	return row.share(), nil
}

// ShareByHash implements agent.ShareStore.
func (s *Store) ShareByHash(ctx context.Context, hash string) (agent.Share, error) {
	return s.shareWhere(ctx, "", "hash = ?", hash)
}

// Share implements agent.ShareStore.
func (s *Store) Share(ctx context.Context, id string) (agent.Share, error) {
	if !textOK(id) {
		return agent.Share{}, missing("share", id)
	}
	return s.shareWhere(ctx, id, "id = ?", id)
}

// Shares implements agent.ShareStore.
func (s *Store) Shares(ctx context.Context, owner string) ([]agent.Share, error) {
	var rows []shareRow
	if err := s.r.WithContext(ctx).Where("owner = ?", owner).Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: shares: %w", err)
	}
	out := make([]agent.Share, len(rows))
	for i, r := range rows {
		out[i] = r.share()
	}
	return out, nil
}

// DeleteShare implements agent.ShareStore.
func (s *Store) DeleteShare(ctx context.Context, id string) error {
	res := s.w.WithContext(ctx).Where("id = ?", id).Delete(&shareRow{})
	if res.Error != nil {
		return fmt.Errorf("store: delete share: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return missing("share", id)
	}
	return nil
}
