package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.UserStore = (*Store)(nil)

// userRow is one account (agent.User). The table is "users": "user" is a
// reserved word in PostgreSQL.
type userRow struct {
	ID    string  `gorm:"primaryKey"`
	Name  string  `gorm:"not null"`
	Email *string `gorm:"uniqueIndex"` // NULL: none
	// UserName is SCIM's userName (agent.User.UserName); NULL: none.
	UserName  *string   `gorm:"uniqueIndex"`
	Role      string    `gorm:"not null"`
	Disabled  bool      `gorm:"not null;default:false"`
	CreatedAt time.Time `gorm:"not null"`
	Budget    string    `gorm:"not null;default:''"`
	// Issuer and Subject: the user at an OpenID provider; NULL for none.
	Issuer  *string `gorm:"uniqueIndex:idx_user_subject,priority:1"`
	Subject *string `gorm:"uniqueIndex:idx_user_subject,priority:2"`
	// PasswordHash is the argon2id PHC string of the user's password
	// (password.go); "" for none.
	PasswordHash string `gorm:"not null;default:''"`
	Pending      bool   `gorm:"not null;default:false"`
	SessionGen   int    `gorm:"not null;default:0"`
}

func (userRow) TableName() string { return "users" }

// keyRow is one API key of a user: only its SHA-256 is kept.
type keyRow struct {
	ID        string    `gorm:"primaryKey"`
	UserID    string    `gorm:"not null;index"`
	User      *userRow  `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
	Name      string    `gorm:"not null"`
	Hash      string    `gorm:"not null;uniqueIndex"`
	CreatedAt time.Time `gorm:"not null"`
	LastUsed  *time.Time
}

func (keyRow) TableName() string { return "user_key" }

// userTables are the tables of accounts, for init's migration.
var userTables = []any{&userRow{}, &keyRow{}, &usageRow{}, &tokenRow{}}

// initUsers makes the implicit admin local (who owns what a database made
// before accounts holds), once.
func initUsers(db *gorm.DB, now time.Time) error {
	return db.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&userRow{ID: agent.LocalUser, Name: agent.LocalUser, Role: agent.RoleAdmin, CreatedAt: now}).Error
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (r userRow) user() agent.User {
	return agent.User{ID: r.ID, Name: r.Name, Email: deref(r.Email), UserName: deref(r.UserName), Role: r.Role, Disabled: r.Disabled,
		CreatedAt: r.CreatedAt.UTC(), Budget: r.Budget, Issuer: deref(r.Issuer), Subject: deref(r.Subject),
		Pending: r.Pending, SessionGen: r.SessionGen}
}

func userRowOf(u agent.User) userRow {
	return userRow{ID: u.ID, Name: u.Name, Email: nullable(u.Email), UserName: nullable(u.UserName), Role: u.Role, Disabled: u.Disabled,
		CreatedAt: u.CreatedAt.UTC().Truncate(time.Microsecond), Budget: u.Budget, Issuer: nullable(u.Issuer), Subject: nullable(u.Subject),
		Pending: u.Pending}
}

func (r keyRow) key() agent.Key {
	k := agent.Key{ID: r.ID, UserID: r.UserID, Name: r.Name, CreatedAt: r.CreatedAt.UTC()}
	if r.LastUsed != nil {
		t := r.LastUsed.UTC()
		k.LastUsed = &t
	}
	return k
}

func taken(err error, what string) error {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return agent.Errorf(agent.CodeConflict, "%s", what)
	}
	return err
}

// CreateUser implements agent.UserStore.
func (s *Store) CreateUser(ctx context.Context, u agent.User) error {
	row := userRowOf(u)
	if err := s.w.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create user: %w", taken(err, "a user with this email (or sign-in) exists already"))
	}
	return nil
}

// User implements agent.UserStore.
func (s *Store) User(ctx context.Context, id string) (agent.User, error) {
	if !textOK(id) {
		return agent.User{}, missing("user", id)
	}
	var r userRow
	if err := s.r.WithContext(ctx).Take(&r, "id = ?", id).Error; err != nil {
		return agent.User{}, fmt.Errorf("store: user: %w", notFound(err, "user", id))
	}
	return r.user(), nil
}

func (s *Store) userWhere(ctx context.Context, what, q string, args ...any) (agent.User, error) {
	var r userRow
	if err := s.r.WithContext(ctx).Where(q, args...).Take(&r).Error; err != nil {
		return agent.User{}, fmt.Errorf("store: user: %w", notFound(err, "user", what))
	}
	return r.user(), nil
}

// UserBySubject implements agent.UserStore.
func (s *Store) UserBySubject(ctx context.Context, issuer, subject string) (agent.User, error) {
	if !textOK(issuer) || !textOK(subject) {
		return agent.User{}, missing("user", subject)
	}
	return s.userWhere(ctx, subject, "issuer = ? AND subject = ?", issuer, subject)
}

// UserByEmail implements agent.UserStore.
func (s *Store) UserByEmail(ctx context.Context, email string) (agent.User, error) {
	if !textOK(email) || email == "" {
		return agent.User{}, missing("user", email)
	}
	return s.userWhere(ctx, email, "email = ?", email)
}

// UserByUserName implements agent.UserStore.
func (s *Store) UserByUserName(ctx context.Context, userName string) (agent.User, error) {
	if !textOK(userName) || userName == "" {
		return agent.User{}, missing("user", userName)
	}
	return s.userWhere(ctx, userName, "user_name = ?", userName)
}

// Users implements agent.UserStore: every user, oldest first.
func (s *Store) Users(ctx context.Context) ([]agent.User, error) {
	var rows []userRow
	if err := s.r.WithContext(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	out := make([]agent.User, len(rows))
	for i, r := range rows {
		out[i] = r.user()
	}
	return out, nil
}

// UpdateUser implements agent.UserStore.
func (s *Store) UpdateUser(ctx context.Context, u agent.User) error {
	row := userRowOf(u)
	res := s.w.WithContext(ctx).Model(&userRow{}).Where("id = ?", u.ID).Updates(map[string]any{
		"name": row.Name, "email": row.Email, "user_name": row.UserName, "role": row.Role, "disabled": row.Disabled, "budget": row.Budget,
		"issuer": row.Issuer, "subject": row.Subject, "pending": row.Pending,
	})
	if res.Error != nil {
		return fmt.Errorf("store: update user: %w", taken(res.Error, "a user with this email (or sign-in) exists already"))
	}
	if res.RowsAffected == 0 {
		return missing("user", u.ID)
	}
	return nil
}

// DeleteUser implements agent.UserStore.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	if !textOK(id) {
		return missing("user", id)
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("user_id = ?", id).Delete(&keyRow{}).Error; err != nil {
			return err
		}
		if err := tx.Where("user_id = ?", id).Delete(&tokenRow{}).Error; err != nil { // password.go
			return err
		}
		if err := tx.Where("user_id = ?", id).Delete(&groupMemberRow{}).Error; err != nil { // usergroup.go
			return err
		}
		if err := deleteMemoryOf(tx, id); err != nil { // memory.go
			return err
		}
		if err := deleteWorkOf(tx, id); err != nil { // nothing runs for a deleted user
			return err
		}
		if err := deleteFilesOf(tx, id); err != nil { // file.go
			return err
		}
		res := tx.Where("id = ?", id).Delete(&userRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return missing("user", id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete user: %w", err)
	}
	s.vectors.reset() // the user's files are gone (file.go)
	return nil
}

// CreateKey implements agent.UserStore.
func (s *Store) CreateKey(ctx context.Context, k agent.Key, hash string) error {
	row := keyRow{ID: k.ID, UserID: k.UserID, Name: k.Name, Hash: hash, CreatedAt: k.CreatedAt.UTC().Truncate(time.Microsecond)}
	if err := s.w.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("store: create key: %w", taken(err, "that key exists already"))
	}
	return nil
}

// Keys implements agent.UserStore.
func (s *Store) Keys(ctx context.Context, userID string) ([]agent.Key, error) {
	var rows []keyRow
	if err := s.r.WithContext(ctx).Where("user_id = ?", userID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: keys: %w", err)
	}
	out := make([]agent.Key, len(rows))
	for i, r := range rows {
		out[i] = r.key()
	}
	return out, nil
}

// DeleteKey implements agent.UserStore.
func (s *Store) DeleteKey(ctx context.Context, userID, keyID string) error {
	res := s.w.WithContext(ctx).Where("id = ? AND user_id = ?", keyID, userID).Delete(&keyRow{})
	if res.Error != nil {
		return fmt.Errorf("store: delete key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return missing("key", keyID)
	}
	return nil
}

// KeyByHash implements agent.UserStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (agent.Key, error) {
	var r keyRow
	if err := s.r.WithContext(ctx).Take(&r, "hash = ?", hash).Error; err != nil {
		return agent.Key{}, fmt.Errorf("store: key: %w", notFound(err, "key", "that key"))
	}
	return r.key(), nil
}

// TouchKey implements agent.UserStore.
func (s *Store) TouchKey(ctx context.Context, keyID string, t time.Time) error {
	t = t.UTC().Truncate(time.Microsecond)
	if err := s.w.WithContext(ctx).Model(&keyRow{}).Where("id = ?", keyID).Update("last_used", t).Error; err != nil {
		return fmt.Errorf("store: touch key: %w", err)
	}
	return nil
}

// Standing implements agent.UserStore: one query per idChunk users,
// every active one's role and key ids.
func (s *Store) Standing(ctx context.Context, ids []string) (map[string]agent.Standing, error) {
	out := make(map[string]agent.Standing, len(ids))
	for chunk := range slices.Chunk(ids, idChunk) {
		rows, err := s.r.WithContext(ctx).Raw("SELECT u.id, u.role, u.session_gen, k.id FROM users u LEFT JOIN user_key k ON k.user_id = u.id WHERE NOT u.disabled AND u.id IN ?", chunk).Rows()
		if err != nil {
			return nil, fmt.Errorf("store: standing: %w", err)
		}
		for rows.Next() {
			var id, role string
			var gen int
			var key sql.NullString
			if err := rows.Scan(&id, &role, &gen, &key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: standing: %w", err)
			}
			st := out[id]
			st.Role, st.SessionGen = role, gen
			if key.Valid {
				st.Keys = append(st.Keys, key.String)
			}
			out[id] = st
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: standing: %w", err)
		}
	}
	return out, nil
}

// KeyCount implements agent.UserStore.
func (s *Store) KeyCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.WithContext(ctx).Raw("SELECT (SELECT COUNT(*) FROM user_key k JOIN users u ON u.id = k.user_id WHERE NOT u.disabled) + (SELECT COUNT(*) FROM users WHERE NOT disabled AND password_hash <> '')").Row().Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count keys: %w", err)
	}
	return n, nil
}

// pushKeyPrefix begins the meta keys of A2A push configs, one per task
// ("a2a:push:<conversation>-<seq>", a2a/push.go pushKey).
const pushKeyPrefix = "a2a:push:"

// deleteWorkOf deletes what would run or call out for owner once they are
// gone: their schedules (and their runs) and the push configs of their
// conversations' tasks. Their conversations stay, for admins.
func deleteWorkOf(tx *gorm.DB, owner string) error {
	mine := tx.Model(&scheduleRow{}).Select("id").Where("owner = ?", owner)
	if err := tx.Where("schedule_id IN (?)", mine).Delete(&scheduleRunRow{}).Error; err != nil {
		return err
	}
	if err := tx.Where("owner = ?", owner).Delete(&scheduleRow{}).Error; err != nil {
		return err
	}
	// A task's key is the prefix, its conversation's id and "-": compared
	// as text, so an id holding LIKE's wildcards matches only itself.
	return tx.Exec(`DELETE FROM meta WHERE key LIKE ? AND EXISTS (SELECT 1 FROM conversation c WHERE c.owner = ? AND substr(meta.key, ?, length(c.id) + 1) = c.id || '-')`,
		pushKeyPrefix+"%", owner, len(pushKeyPrefix)+1).Error
}
