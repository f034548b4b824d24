package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// Accounts (DESIGN.md §11.1, §11.9): users, their roles and their API
// keys. Accounts is the centre of user management as the Runner is of
// conversations: it decides who may do what from the principal in ctx
// (an admin manages everyone; a member reads themself and manages their
// own keys), and the server's routes and the CLI only call it.

// User is one account.
type User struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
	// UserName is the name an identity provider provisions the user by
	// (SCIM's userName; unique); "" for none.
	UserName  string    `json:"user_name,omitempty"`
	Role      string    `json:"role"`
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"created_at"`
	// Budget overrides the server's default token budget ("2M/month",
	// "none"); "" takes the default (budget.go).
	Budget string `json:"budget,omitempty"`
	// Issuer and Subject name the user at an OpenID provider (oidc sign-in).
	Issuer  string `json:"-"`
	Subject string `json:"-"`
	// Pending is a user who signed up and waits for an admin's approval
	// (AGENTIK_SIGNUP=approval); they are disabled until then.
	Pending bool `json:"pending,omitempty"`
	// SessionGen counts the times the user's sessions were all ended
	// (a password set or reset): a session made before does not hold.
	SessionGen int `json:"-"`
}

// Principal is the principal u signs in as.
func (u User) Principal() Principal { return Principal{UserID: u.ID, Role: u.Role} }

// Key is an API key of a user; the key itself is shown once, when made,
// and only its hash is kept.
type Key struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	LastUsed  *time.Time `json:"last_used,omitempty"`
}

// UserStore keeps accounts (the database, package store, implements it).
type UserStore interface {
	CreateUser(ctx context.Context, u User) error // conflict for a taken id, email or issuer+subject
	User(ctx context.Context, id string) (User, error)
	Users(ctx context.Context) ([]User, error)
	UpdateUser(ctx context.Context, u User) error
	DeleteUser(ctx context.Context, id string) error // and their keys
	CreateKey(ctx context.Context, k Key, hash string) error
	Keys(ctx context.Context, userID string) ([]Key, error)
	DeleteKey(ctx context.Context, userID, keyID string) error
	// KeyByHash returns the key whose hash is hash, or not_found.
	KeyByHash(ctx context.Context, hash string) (Key, error)
	// TouchKey sets a key's last use.
	TouchKey(ctx context.Context, keyID string, t time.Time) error
	// KeyCount counts the credentials of users who are not disabled:
	// their keys and passwords (with any, authentication is on).
	KeyCount(ctx context.Context) (int64, error)
	// UserBySubject returns the user an OpenID provider names, or not_found.
	UserBySubject(ctx context.Context, issuer, subject string) (User, error)
	// UserByEmail returns the user with that email, or not_found.
	UserByEmail(ctx context.Context, email string) (User, error)
	// UserByUserName returns the user of that SCIM userName, or not_found.
	UserByUserName(ctx context.Context, userName string) (User, error)
	// Standing returns the active (existing, not disabled) users among
	// ids, each with their role and key ids, in one read however many
	// they are; the others are absent from the map.
	Standing(ctx context.Context, ids []string) (map[string]Standing, error)
}

// Standing is what an active user signs in with: their role and the ids
// of their keys. The server checks the credentials of its running
// requests against it every second (a change made by another instance
// shows by then): one read for all of them, so that the check costs the
// same for a hundred users as for one.
type Standing struct {
	Role string
	Keys []string // key ids
	// SessionGen is the user's User.SessionGen: their sessions of an
	// older one no longer hold.
	SessionGen int
}

// Accounts manages users and keys.
type Accounts struct {
	st  UserStore
	now Clock
	// changed is told that a user's access may have changed (disabled,
	// deleted, role changed, a key revoked): the server closes what no
	// longer holds.
	changed func(userID string)
	pw      *Passwords // password accounts (password.go); nil: off
	audit   *Audit     // the audit log (audit.go); nil: none
}

// WithAudit returns a copy of a that records its changes in au.
func (a *Accounts) WithAudit(au *Audit) *Accounts {
	b := *a
	b.audit = au
	return &b
}

// NewAccounts makes Accounts over st; changed may be nil.
func NewAccounts(st UserStore, now Clock, changed func(userID string)) *Accounts {
	if now == nil {
		now = time.Now
	}
	if changed == nil {
		changed = func(string) {}
	}
	return &Accounts{st: st, now: now, changed: changed}
}

// Store is the UserStore under a.
func (a *Accounts) Store() UserStore { return a.st }

// KeyPrefix begins every per-user API key.
const KeyPrefix = "agk_"

// HashKey is what is stored of an API key.
func HashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func errAdminOnly() error { return Errorf(CodeForbidden, "only an admin may do this") }

// mayManage reports whether ctx's principal may manage user id's keys.
func mayManage(ctx context.Context, id string) error {
	p := PrincipalFrom(ctx)
	if p.Admin() || p.UserID == id {
		return nil
	}
	return errAdminOnly()
}

// Me returns the caller's account; the implicit admin of a server
// without accounts is the user local.
func (a *Accounts) Me(ctx context.Context) (User, error) {
	p := PrincipalFrom(ctx)
	u, err := a.st.User(ctx, p.UserID)
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// UserInput is what an admin gives to make or change a user; nil fields
// are left as they are.
type UserInput struct {
	Name     *string `json:"name,omitempty"`
	Email    *string `json:"email,omitempty"`
	Role     *string `json:"role,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
	Budget   *string `json:"budget,omitempty"`
	UserName *string `json:"user_name,omitempty"`
}

func checkUser(u *User) error {
	u.Name = strings.TrimSpace(u.Name)
	if u.Name == "" || utf8.RuneCountInString(u.Name) > 200 {
		return Errorf(CodeBadRequest, "name must be 1 to 200 characters")
	}
	u.Email = strings.TrimSpace(u.Email)
	if u.Email != "" {
		if a, err := mail.ParseAddress(u.Email); err != nil || a.Address != u.Email || len(u.Email) > 320 {
			return Errorf(CodeBadRequest, "email %q is not an address (name@example.com)", Shorten(u.Email, 80))
		}
		u.Email = NormalEmail(u.Email)
	}
	u.UserName = strings.TrimSpace(u.UserName)
	if len(u.UserName) > 320 || !utf8.ValidString(u.UserName) || strings.ContainsFunc(u.UserName, func(r rune) bool { return r < ' ' }) {
		return Errorf(CodeBadRequest, "user_name must be text of at most 320 bytes")
	}
	switch u.Role {
	case RoleAdmin, RoleMember:
	default:
		return Errorf(CodeBadRequest, "role must be %q or %q, got %q", RoleAdmin, RoleMember, Shorten(u.Role, 40))
	}
	if u.Budget != "" {
		if _, err := ParseBudget(u.Budget); err != nil {
			return err
		}
	}
	return nil
}

// AddUser makes a user (admin only); role defaults to member.
func (a *Accounts) AddUser(ctx context.Context, in UserInput) (User, error) {
	if !PrincipalFrom(ctx).Admin() {
		return User{}, errAdminOnly()
	}
	u, err := a.addUser(ctx, in, "", "")
	if err == nil {
		a.audit.Record(ctx, AuditUserCreated, u.ID, map[string]any{"role": u.Role, "email": u.Email})
	}
	return u, err
}

// addUser makes a user, named at an OpenID provider when issuer is set.
func (a *Accounts) addUser(ctx context.Context, in UserInput, issuer, subject string) (User, error) {
	u := User{ID: NewID(), Role: RoleMember, CreatedAt: a.now().UTC(), Issuer: issuer, Subject: subject}
	if in.Name != nil {
		u.Name = *in.Name
	}
	if in.Email != nil {
		u.Email = *in.Email
	}
	if in.Role != nil {
		u.Role = *in.Role
	}
	if in.Budget != nil {
		u.Budget = strings.TrimSpace(*in.Budget)
	}
	if in.Disabled != nil {
		u.Disabled = *in.Disabled
	}
	if in.UserName != nil {
		u.UserName = *in.UserName
	}
	if err := checkUser(&u); err != nil {
		return User{}, err
	}
	if err := a.st.CreateUser(ctx, u); err != nil {
		return User{}, err
	}
	return u, nil
}

// Users lists every user (admin only).
func (a *Accounts) Users(ctx context.Context) ([]User, error) {
	if !PrincipalFrom(ctx).Admin() {
		return nil, errAdminOnly()
	}
	return a.st.Users(ctx)
}

// User returns one user: an admin any, a member themself.
func (a *Accounts) User(ctx context.Context, id string) (User, error) {
	if err := mayManage(ctx, id); err != nil {
		return User{}, err
	}
	return a.st.User(ctx, id)
}

// UpdateUser changes a user (admin only). The implicit admin local keeps
// its role and cannot be disabled (it is who AGENTIK_API_KEYS sign in as).
func (a *Accounts) UpdateUser(ctx context.Context, id string, in UserInput) (User, error) {
	if !PrincipalFrom(ctx).Admin() {
		return User{}, errAdminOnly()
	}
	u, err := a.st.User(ctx, id)
	if err != nil {
		return User{}, err
	}
	if in.Name != nil {
		u.Name = *in.Name
	}
	if in.Email != nil {
		u.Email = *in.Email
	}
	if in.Role != nil {
		u.Role = *in.Role
	}
	if in.Disabled != nil {
		u.Disabled = *in.Disabled
		u.Pending = u.Pending && u.Disabled // enabling a pending user approves them
	}
	if in.Budget != nil {
		u.Budget = strings.TrimSpace(*in.Budget)
	}
	if in.UserName != nil {
		u.UserName = *in.UserName
	}
	if id == LocalUser && (u.Role != RoleAdmin || u.Disabled) {
		return User{}, Errorf(CodeBadRequest, "the user local is the server's own admin (AGENTIK_API_KEYS sign in as it): it stays an admin and cannot be disabled; revoke its keys instead")
	}
	if err := checkUser(&u); err != nil {
		return User{}, err
	}
	if err := a.st.UpdateUser(ctx, u); err != nil {
		return User{}, err
	}
	a.changed(id)
	a.audit.Record(ctx, AuditUserUpdated, id, in)
	return u, nil
}

// DeleteUser deletes a user and their keys (admin only); their
// conversations stay, for admins to see.
func (a *Accounts) DeleteUser(ctx context.Context, id string) error {
	if !PrincipalFrom(ctx).Admin() {
		return errAdminOnly()
	}
	if id == LocalUser {
		return Errorf(CodeBadRequest, "the user local is the server's own admin and cannot be deleted")
	}
	if err := a.st.DeleteUser(ctx, id); err != nil {
		return err
	}
	a.changed(id)
	a.audit.Record(ctx, AuditUserDeleted, id, nil)
	return nil
}

// NewKey is a key just made: the key itself is in Key, this once.
type NewKey struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Key  string `json:"key"`
}

// CreateKey makes an API key for user id (an admin for anyone, a member
// for themself).
func (a *Accounts) CreateKey(ctx context.Context, userID, name string) (NewKey, error) {
	if err := mayManage(ctx, userID); err != nil {
		return NewKey{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 200 {
		return NewKey{}, Errorf(CodeBadRequest, "a key needs a name of 1 to 200 characters (what it is for: \"laptop\", \"ci\")")
	}
	u, err := a.st.User(ctx, userID)
	if err != nil {
		return NewKey{}, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return NewKey{}, fmt.Errorf("make key: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	k := Key{ID: NewID(), UserID: u.ID, Name: name, CreatedAt: a.now().UTC()}
	if err := a.st.CreateKey(ctx, k, HashKey(secret)); err != nil {
		return NewKey{}, err
	}
	a.changed(u.ID)
	a.audit.Record(ctx, AuditKeyCreated, u.ID, map[string]string{"key_id": k.ID, "name": k.Name})
	return NewKey{ID: k.ID, Name: k.Name, Key: secret}, nil
}

// Keys lists user id's keys (never the keys themselves).
func (a *Accounts) Keys(ctx context.Context, userID string) ([]Key, error) {
	if err := mayManage(ctx, userID); err != nil {
		return nil, err
	}
	if _, err := a.st.User(ctx, userID); err != nil {
		return nil, err
	}
	return a.st.Keys(ctx, userID)
}

// RevokeKey deletes one of user id's keys: requests with it fail at once.
func (a *Accounts) RevokeKey(ctx context.Context, userID, keyID string) error {
	if err := mayManage(ctx, userID); err != nil {
		return err
	}
	if err := a.st.DeleteKey(ctx, userID, keyID); err != nil {
		return err
	}
	a.changed(userID)
	a.audit.Record(ctx, AuditKeyRevoked, userID, map[string]string{"key_id": keyID})
	return nil
}

// Authenticate returns the user and key of an API key: unauthorized for
// an unknown key, a deleted user's or a disabled one's.
func (a *Accounts) Authenticate(ctx context.Context, secret string) (User, Key, error) {
	bad := Errorf(CodeUnauthorized, "this API key is not valid (unknown, revoked, or its user is disabled)")
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) > 100 {
		return User{}, Key{}, bad
	}
	k, err := a.st.KeyByHash(ctx, HashKey(secret))
	if ErrorCode(err) == CodeNotFound {
		return User{}, Key{}, bad
	}
	if err != nil {
		return User{}, Key{}, err
	}
	u, err := a.Active(ctx, k.UserID)
	if err != nil {
		return User{}, Key{}, err
	}
	return u, k, nil
}

// Active returns user id if they may sign in: unauthorized for a deleted
// or disabled user.
func (a *Accounts) Active(ctx context.Context, id string) (User, error) {
	u, err := a.st.User(ctx, id)
	if ErrorCode(err) == CodeNotFound || err == nil && u.Disabled {
		return User{}, Errorf(CodeUnauthorized, "this account is disabled or deleted")
	}
	return u, err
}

// Standing returns the standing of the active users among ids (see
// UserStore.Standing): a user who is deleted or disabled is absent.
func (a *Accounts) Standing(ctx context.Context, ids []string) (map[string]Standing, error) {
	return a.st.Standing(ctx, ids)
}

// NormalEmail is the form in which emails are stored and compared: trimmed
// and ASCII-lowercased only. Unicode case folding would make distinct
// addresses one (U+212A KELVIN SIGN folds to "k": "\u212Aate@…" would sign
// in as kate@…), and mail systems do not fold them either.
func NormalEmail(s string) string {
	s = strings.TrimSpace(s)
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// EmailIn reports whether email is one of list (AGENTIK_ADMINS), both
// compared as NormalEmail.
func EmailIn(list []string, email string) bool {
	email = NormalEmail(email)
	if email == "" {
		return false
	}
	for _, e := range list {
		if NormalEmail(e) == email {
			return true
		}
	}
	return false
}

// SignIn is a person an identity provider (OIDC, a trusted proxy) vouches
// for.
type SignIn struct {
	Issuer, Subject string // who the provider says they are
	Email           string // verified; "" when unknown
	Name            string
	Open            bool // signup is open: a new person gets a member account
	Admin           bool // the provider's claims make them an admin (AGENTIK_ADMINS, the admin group)
}

// SignIn returns the account of a person a provider signed in: by issuer
// and subject; else the user an admin invited by that email (now linked to
// the provider); else, with open signup, a new member (or admin). A
// disabled user is unauthorized; an uninvited one forbidden. Nothing is
// created when it fails.
func (a *Accounts) SignIn(ctx context.Context, in SignIn) (User, error) {
	in.Email = NormalEmail(in.Email)
	u, err := a.st.UserBySubject(ctx, in.Issuer, in.Subject)
	switch {
	case err == nil:
	case ErrorCode(err) != CodeNotFound:
		return User{}, err
	case in.Email != "":
		u, err = a.st.UserByEmail(ctx, in.Email)
		if err == nil && u.Issuer == "" {
			u.Issuer, u.Subject = in.Issuer, in.Subject // the invited user signs in for the first time
			if err = a.st.UpdateUser(ctx, u); err != nil {
				return User{}, err
			}
			break
		}
		if err == nil {
			return User{}, Errorf(CodeForbidden, "the account of %s signs in with another identity", in.Email)
		}
		if ErrorCode(err) != CodeNotFound {
			return User{}, err
		}
		fallthrough
	default:
		if !in.Open {
			return User{}, Errorf(CodeForbidden, "%s has no account here and sign-up is by invitation: ask an admin to add you (agentik user add NAME --email EMAIL)", Shorten(firstNonEmpty(in.Email, in.Subject), 80))
		}
		role := RoleMember
		if in.Admin {
			role = RoleAdmin
		}
		name := Shorten(firstNonEmpty(in.Name, in.Email, in.Subject), 200)
		uin := UserInput{Name: &name, Role: &role}
		if in.Email != "" {
			uin.Email = &in.Email
		}
		return a.addUser(ctx, uin, in.Issuer, in.Subject)
	}
	if u.Disabled {
		return User{}, Errorf(CodeUnauthorized, "this account is disabled")
	}
	if in.Admin && u.Role != RoleAdmin {
		u.Role = RoleAdmin
		if err := a.st.UpdateUser(ctx, u); err != nil {
			return User{}, err
		}
	}
	return u, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// ErrorMessage is err's message as a client sees it.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	return err.Error()
}
