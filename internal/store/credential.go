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

// credentialRow is a sealed secret of a remote MCP server (tool/oauth.go):
// a user's OAuth token (subject: the user's id) or the server's client
// registration (subject ""). Data is already encrypted by the caller
// (internal/secret); the store never sees the plain text.
type credentialRow struct {
	Server    string    `gorm:"primaryKey"`
	Subject   string    `gorm:"primaryKey"`
	Data      []byte    `gorm:"not null"`
	UpdatedAt time.Time `gorm:"not null"`
}

func (credentialRow) TableName() string { return "mcp_credential" }

// credentialTables are init's migration of MCP credentials.
var credentialTables = []any{&credentialRow{}}

// Credential returns the sealed credential of server for subject, or
// agent.ErrNotFound.
func (s *Store) Credential(ctx context.Context, server, subject string) ([]byte, error) {
	var r credentialRow
	err := s.r.WithContext(ctx).Take(&r, "server = ? AND subject = ?", server, subject).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("store: credential: %w", agent.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: credential: %w", err)
	}
	return r.Data, nil
}

// LatestCredentialSubject is the subject other than "" whose credential
// of server changed last, or agent.ErrNotFound.
func (s *Store) LatestCredentialSubject(ctx context.Context, server string) (string, error) {
	var r credentialRow
	err := s.r.WithContext(ctx).Where("server = ? AND subject <> ?", server, "").Order("updated_at DESC").Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", fmt.Errorf("store: credential: %w", agent.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: credential: %w", err)
	}
	return r.Subject, nil
}

// SetCredential stores the sealed credential of server for subject,
// replacing what was there.
func (s *Store) SetCredential(ctx context.Context, server, subject string, data []byte) error {
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "server"}, {Name: "subject"}},
		DoUpdates: clause.AssignmentColumns([]string{"data", "updated_at"}),
	}).Create(&credentialRow{Server: server, Subject: subject, Data: data, UpdatedAt: s.now()}).Error
	if err != nil {
		return fmt.Errorf("store: set credential: %w", err)
	}
	return nil
}

// DeleteCredential removes the credential of server for subject, if any.
func (s *Store) DeleteCredential(ctx context.Context, server, subject string) error {
	if err := s.w.WithContext(ctx).Delete(&credentialRow{}, "server = ? AND subject = ?", server, subject).Error; err != nil {
		return fmt.Errorf("store: delete credential: %w", err)
	}
	return nil
}
