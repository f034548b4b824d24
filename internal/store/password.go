package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.PasswordStore = (*Store)(nil)

// Password accounts (agent/password.go): a user's password hash is a
// column of users; one-time tokens (invites, reset links) are rows of
// user_token, kept by their SHA-256 and used up by the write that needs
// them, in its transaction.

// tokenRow is one invite or reset link.
type tokenRow struct {
	ID        string    `gorm:"primaryKey"`
	Kind      string    `gorm:"not null"`
	Hash      string    `gorm:"not null;uniqueIndex"`
	UserID    *string   `gorm:"index"` // a reset's user
	Email     string    `gorm:"not null;default:''"`
	Role      string    `gorm:"not null;default:''"`
	CreatedBy string    `gorm:"not null;default:''"`
	CreatedAt time.Time `gorm:"not null"`
	ExpiresAt time.Time `gorm:"not null"`
	UsedAt    *time.Time
}

func (tokenRow) TableName() string { return "user_token" }

func (r tokenRow) token() agent.Token {
	return agent.Token{ID: r.ID, Kind: r.Kind, UserID: deref(r.UserID), Email: r.Email, Role: r.Role,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
}

func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// PasswordOf implements agent.PasswordStore.
func (s *Store) PasswordOf(ctx context.Context, email string) (agent.User, string, error) {
	if !textOK(email) || email == "" {
		return agent.User{}, "", missing("user", email)
	}
	var r userRow
	if err := s.r.WithContext(ctx).Take(&r, "email = ?", email).Error; err != nil {
		return agent.User{}, "", fmt.Errorf("store: password: %w", notFound(err, "user", email))
	}
	return r.user(), r.PasswordHash, nil
}

// useToken marks the live token of kind and hash used at now, in tx.
func useToken(tx *gorm.DB, kind, hash string, now time.Time) (tokenRow, error) {
	var t tokenRow
	if err := tx.Take(&t, "hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ?", hash, kind, micro(now)).Error; err != nil {
		return tokenRow{}, notFound(err, kind, "that link")
	}
	n := micro(now)
	res := tx.Model(&tokenRow{}).Where("id = ? AND used_at IS NULL", t.ID).Update("used_at", n)
	if res.Error != nil {
		return tokenRow{}, res.Error
	}
	if res.RowsAffected == 0 { // used by another request first
		return tokenRow{}, missing(kind, "that link")
	}
	return t, nil
}

// SignUp implements agent.PasswordStore.
func (s *Store) SignUp(ctx context.Context, u agent.User, hash, invite string, now time.Time) error {
	row := userRowOf(u)
	row.PasswordHash = hash
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if invite != "" {
			if _, err := useToken(tx, agent.TokenInvite, invite, now); err != nil {
				return err
			}
		}
		return taken(tx.Create(&row).Error, "a user with this email exists already: sign in, or ask an admin for a reset link")
	})
	if err != nil {
		return fmt.Errorf("store: sign up: %w", err)
	}
	return nil
}

// setPassword sets user id's hash, in tx; end ends their sessions.
func setPassword(tx *gorm.DB, id, hash string, end bool) (agent.User, error) {
	set := map[string]any{"password_hash": hash}
	if end {
		set["session_gen"] = gorm.Expr("session_gen + 1")
	}
	res := tx.Model(&userRow{}).Where("id = ?", id).Updates(set)
	if res.Error != nil {
		return agent.User{}, res.Error
	}
	if res.RowsAffected == 0 {
		return agent.User{}, missing("user", id)
	}
	var r userRow
	if err := tx.Take(&r, "id = ?", id).Error; err != nil {
		return agent.User{}, notFound(err, "user", id)
	}
	return r.user(), nil
}

// SetPassword implements agent.PasswordStore.
func (s *Store) SetPassword(ctx context.Context, id, hash string) (agent.User, error) {
	var u agent.User
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		u, err = setPassword(tx, id, hash, false)
		return err
	})
	if err != nil {
		return agent.User{}, fmt.Errorf("store: set password: %w", err)
	}
	return u, nil
}

// CreateToken implements agent.PasswordStore.
func (s *Store) CreateToken(ctx context.Context, t agent.Token, hash string) error {
	row := tokenRow{ID: t.ID, Kind: t.Kind, Hash: hash, UserID: nullable(t.UserID), Email: t.Email, Role: t.Role,
		CreatedBy: t.CreatedBy, CreatedAt: micro(t.CreatedAt), ExpiresAt: micro(t.ExpiresAt)}
	if err := s.w.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create token: %w", taken(err, "that token exists already"))
	}
	return nil
}

// Token implements agent.PasswordStore.
func (s *Store) Token(ctx context.Context, kind, hash string, now time.Time) (agent.Token, error) {
	var r tokenRow
	if err := s.r.WithContext(ctx).Take(&r, "hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ?", hash, kind, micro(now)).Error; err != nil {
		return agent.Token{}, fmt.Errorf("store: token: %w", notFound(err, kind, "that link"))
	}
	return r.token(), nil
}

// ResetPassword implements agent.PasswordStore.
func (s *Store) ResetPassword(ctx context.Context, token, hash string, now time.Time) (agent.User, error) {
	var u agent.User
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		t, err := useToken(tx, agent.TokenReset, token, now)
		if err != nil {
			return err
		}
		u, err = setPassword(tx, deref(t.UserID), hash, true)
		return err
	})
	if err != nil {
		return agent.User{}, fmt.Errorf("store: reset password: %w", err)
	}
	return u, nil
}
