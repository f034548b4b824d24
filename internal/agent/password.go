package agent

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Password accounts (DESIGN.md §12.3, §12.5) for teams without an
// identity provider: sign-up (with an admin's invite link, or by oneself
// when AGENTIK_SIGNUP allows it), sign-in with email and password, a
// change, and an admin's reset link. Passwords reach only the
// PasswordHasher (argon2id, package password); the store keeps their
// hashes. A reset ends every session of the user (SessionGen goes up).

// Sign-up modes (AGENTIK_SIGNUP).
const (
	// SignupClosed: only an admin's invite link makes an account.
	SignupClosed = "closed"
	// SignupInvite: members may make invite links too (for members).
	SignupInvite = "invite"
	// SignupApproval: anyone may sign up; the account is pending until an
	// admin enables it.
	SignupApproval = "approval"
	// SignupOpen: anyone may sign up and sign in at once, as a member.
	SignupOpen = "open"
)

// MinPasswordLen is the shortest password taken (in characters).
const MinPasswordLen = 12

// maxPasswordLen bounds what is hashed.
const maxPasswordLen = 1024

// InviteTTL and ResetTTL are how long an invite and a reset link hold.
const (
	InviteTTL = 7 * 24 * time.Hour
	ResetTTL  = 24 * time.Hour
)

// Token kinds.
const (
	TokenInvite = "invite"
	TokenReset  = "reset"
)

// PasswordHasher hashes and checks passwords (package password implements
// it with argon2id). Verify of an empty hash costs what a real one does
// and answers false.
type PasswordHasher interface {
	Hash(ctx context.Context, password string) (string, error)
	Verify(ctx context.Context, hash, password string) (bool, error)
}

// Token is a one-time link an admin hands out: an invite (with the email
// and role the account gets) or a reset of a user's password. Only its
// hash is kept.
type Token struct {
	ID        string
	Kind      string // TokenInvite, TokenReset
	UserID    string // the reset's user
	Email     string // the invite's email; "" for any
	Role      string // the invite's role
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// PasswordStore keeps password hashes and one-time tokens (the database,
// package store, implements it).
type PasswordStore interface {
	// PasswordOf returns the user with that email and their password hash
	// ("" when they have none), or not_found.
	PasswordOf(ctx context.Context, email string) (User, string, error)
	// SignUp makes u with the password hash hash; with invite set, it uses
	// up that invite token (by its hash) in the same transaction:
	// not_found when it is unknown, used or expired at now.
	SignUp(ctx context.Context, u User, hash, invite string, now time.Time) error
	// SetPassword sets user id's password hash; it returns the user as
	// now.
	SetPassword(ctx context.Context, id, hash string) (User, error)
	// CreateToken keeps a one-time token by its hash.
	CreateToken(ctx context.Context, t Token, hash string) error
	// Token returns the live (unused, unexpired at now) token of kind
	// whose hash is hash, or not_found.
	Token(ctx context.Context, kind, hash string, now time.Time) (Token, error)
	// ResetPassword uses up the reset token whose hash is token and sets
	// its user's password hash (ending their sessions) in one
	// transaction: not_found when the token is unknown, used or expired.
	ResetPassword(ctx context.Context, token, hash string, now time.Time) (User, error)
}

// Passwords turns on password accounts in Accounts.
type Passwords struct {
	Hasher PasswordHasher
	Store  PasswordStore
	Signup string // SignupClosed when ""
}

// WithPasswords returns a copy of a with password accounts on.
func (a *Accounts) WithPasswords(p Passwords) *Accounts {
	if p.Signup == "" {
		p.Signup = SignupClosed
	}
	b := *a
	b.pw = &p
	return &b
}

// Signup is the sign-up mode; "" when password accounts are off.
func (a *Accounts) Signup() string {
	if a.pw == nil {
		return ""
	}
	return a.pw.Signup
}

func (a *Accounts) passwords() (*Passwords, error) {
	if a.pw == nil {
		return nil, Errorf(CodeUnavailable, "this server keeps no password accounts")
	}
	return a.pw, nil
}

// CheckPassword is the bad_request of a password that is too short or too
// long.
func CheckPassword(pw string) error {
	n := utf8.RuneCountInString(pw)
	if n < MinPasswordLen {
		return Errorf(CodeBadRequest, "the password is %d characters long; it needs at least %d (a few words make a good one)", n, MinPasswordLen)
	}
	if len(pw) > maxPasswordLen {
		return Errorf(CodeBadRequest, "the password is longer than %d bytes", maxPasswordLen)
	}
	return nil
}

// newToken returns a random one-time token and the hash that is kept.
func newToken() (string, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("make token: %w", err)
	}
	t := base64.RawURLEncoding.EncodeToString(b[:])
	return t, HashKey(t), nil
}

// InviteInput is what an invite gives the account it makes.
type InviteInput struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

// Invite is an invite link just made: its token is shown this once.
type Invite struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Invite makes an invite: an admin's, for any role; with sign-up other
// than closed a member's too, for members.
func (a *Accounts) Invite(ctx context.Context, in InviteInput) (Invite, error) {
	pw, err := a.passwords()
	if err != nil {
		return Invite{}, err
	}
	p := PrincipalFrom(ctx)
	if in.Role == "" {
		in.Role = RoleMember
	}
	if !p.Admin() && (pw.Signup == SignupClosed || in.Role != RoleMember) {
		return Invite{}, errAdminOnly()
	}
	u := User{Name: "invite", Email: in.Email, Role: in.Role}
	if err := checkUser(&u); err != nil {
		return Invite{}, err
	}
	secret, hash, err := newToken()
	if err != nil {
		return Invite{}, err
	}
	now := a.now().UTC()
	t := Token{ID: NewID(), Kind: TokenInvite, Email: u.Email, Role: u.Role, CreatedBy: p.UserID, CreatedAt: now, ExpiresAt: now.Add(InviteTTL)}
	if err := pw.Store.CreateToken(ctx, t, hash); err != nil {
		return Invite{}, err
	}
	a.audit.Record(ctx, AuditInvite, t.ID, map[string]string{"email": t.Email, "role": t.Role})
	return Invite{ID: t.ID, Token: secret, ExpiresAt: t.ExpiresAt}, nil
}

// SignUpInput is a sign-up: with an invite's token, or without one when
// the sign-up mode allows it.
type SignUpInput struct {
	Token    string `json:"token"`
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name"`
}

// SignUp makes a password account: with a live invite token (its role;
// its email when it names one), else as AGENTIK_SIGNUP allows (approval:
// the user is pending, disabled until an admin enables them). Nothing is
// written when it fails.
func (a *Accounts) SignUp(ctx context.Context, in SignUpInput) (User, error) {
	pw, err := a.passwords()
	if err != nil {
		return User{}, err
	}
	u := User{ID: NewID(), Name: firstNonEmpty(in.Name, in.Email), Email: in.Email, Role: RoleMember, CreatedAt: a.now().UTC()}
	if strings.TrimSpace(u.Email) == "" {
		return User{}, Errorf(CodeBadRequest, "email is required: it is what you sign in with")
	}
	if err := checkUser(&u); err != nil {
		return User{}, err
	}
	if err := CheckPassword(in.Password); err != nil {
		return User{}, err
	}
	var tokenHash string
	if in.Token != "" {
		tokenHash = HashKey(in.Token)
		t, err := pw.Store.Token(ctx, TokenInvite, tokenHash, a.now())
		if ErrorCode(err) == CodeNotFound {
			return User{}, Errorf(CodeNotFound, "this invite link is unknown, used or expired: ask an admin for a new one")
		}
		if err != nil {
			return User{}, err
		}
		if t.Email != "" && t.Email != u.Email {
			return User{}, Errorf(CodeBadRequest, "this invite is for %s: sign up with that email", t.Email)
		}
		u.Role = t.Role
	} else {
		switch pw.Signup {
		case SignupOpen:
		case SignupApproval:
			u.Disabled, u.Pending = true, true
		default:
			return User{}, Errorf(CodeForbidden, "sign-up is by invitation on this server: ask an admin for an invite link")
		}
	}
	hash, err := pw.Hasher.Hash(ctx, in.Password)
	if err != nil {
		return User{}, err
	}
	if err := pw.Store.SignUp(ctx, u, hash, tokenHash, a.now()); err != nil {
		if ErrorCode(err) == CodeNotFound {
			return User{}, Errorf(CodeNotFound, "this invite link is unknown, used or expired: ask an admin for a new one")
		}
		return User{}, err
	}
	a.changed(u.ID)
	a.audit.RecordAs(ctx, u.ID, AuditSignUp, u.ID, map[string]any{"email": u.Email, "role": u.Role, "invited": tokenHash != "", "pending": u.Pending})
	return u, nil
}

// errBadPassword is the one answer to a wrong email or password: which of
// the two is not told.
func errBadPassword() error {
	return Errorf(CodeUnauthorized, "that email and password do not match an account")
}

// PasswordSignIn returns the user whose email and password these are:
// unauthorized for a wrong pair (unknown email or wrong password take the
// same time), forbidden for a pending account, unauthorized for a
// disabled one.
func (a *Accounts) PasswordSignIn(ctx context.Context, email, password string) (User, error) {
	pw, err := a.passwords()
	if err != nil {
		return User{}, err
	}
	email = strings.ToLower(strings.TrimSpace(email))
	if email == "" || password == "" || len(password) > maxPasswordLen {
		return User{}, errBadPassword()
	}
	u, hash, err := pw.Store.PasswordOf(ctx, email)
	if err != nil && ErrorCode(err) != CodeNotFound {
		return User{}, err
	}
	ok, verr := pw.Hasher.Verify(ctx, hash, password) // hash "" costs the same and fails
	if verr != nil {
		return User{}, verr
	}
	if err != nil || !ok {
		return User{}, errBadPassword()
	}
	if u.Pending {
		return User{}, Errorf(CodeForbidden, "your account waits for an admin's approval")
	}
	if u.Disabled {
		return User{}, Errorf(CodeUnauthorized, "this account is disabled")
	}
	return u, nil
}

// PasswordChange is a caller's new password; Current is required when
// they have one.
type PasswordChange struct {
	Current string `json:"current"`
	New     string `json:"new"`
}

// ChangePassword sets the caller's password (their current one first,
// when they have one); their sessions go on.
func (a *Accounts) ChangePassword(ctx context.Context, in PasswordChange) (User, error) {
	pw, err := a.passwords()
	if err != nil {
		return User{}, err
	}
	if err := CheckPassword(in.New); err != nil {
		return User{}, err
	}
	me, err := a.st.User(ctx, PrincipalFrom(ctx).UserID)
	if err != nil {
		return User{}, err
	}
	if me.Email == "" {
		return User{}, Errorf(CodeBadRequest, "your account has no email to sign in with: ask an admin to set one")
	}
	_, hash, err := pw.Store.PasswordOf(ctx, me.Email)
	if err != nil {
		return User{}, err
	}
	if hash != "" {
		ok, err := pw.Hasher.Verify(ctx, hash, in.Current)
		if err != nil {
			return User{}, err
		}
		if !ok {
			return User{}, Errorf(CodeForbidden, "current is not your password")
		}
	}
	newHash, err := pw.Hasher.Hash(ctx, in.New)
	if err != nil {
		return User{}, err
	}
	u, err := pw.Store.SetPassword(ctx, me.ID, newHash)
	if err != nil {
		return User{}, err
	}
	a.changed(u.ID)
	a.audit.Record(ctx, AuditPasswordChange, u.ID, nil)
	return u, nil
}

// ResetLink is an admin's reset link for a user: its token is shown this
// once.
type ResetLink struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ResetLink makes a link that lets user id choose a new password (admin
// only); the user needs an email to sign in with.
func (a *Accounts) ResetLink(ctx context.Context, id string) (ResetLink, error) {
	pw, err := a.passwords()
	if err != nil {
		return ResetLink{}, err
	}
	if !PrincipalFrom(ctx).Admin() {
		return ResetLink{}, errAdminOnly()
	}
	u, err := a.st.User(ctx, id)
	if err != nil {
		return ResetLink{}, err
	}
	if u.Email == "" {
		return ResetLink{}, Errorf(CodeBadRequest, "user %s has no email to sign in with: set one first (PATCH /agentik/users/%s {\"email\"})", u.ID, u.ID)
	}
	secret, hash, err := newToken()
	if err != nil {
		return ResetLink{}, err
	}
	now := a.now().UTC()
	t := Token{ID: NewID(), Kind: TokenReset, UserID: u.ID, CreatedBy: PrincipalFrom(ctx).UserID, CreatedAt: now, ExpiresAt: now.Add(ResetTTL)}
	if err := pw.Store.CreateToken(ctx, t, hash); err != nil {
		return ResetLink{}, err
	}
	a.audit.Record(ctx, AuditResetLink, u.ID, nil)
	return ResetLink{Token: secret, ExpiresAt: t.ExpiresAt}, nil
}

// ResetInput is a reset link's token and the new password.
type ResetInput struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

// ResetPassword sets the password of a reset link's user, uses the link
// up and ends every session of the user.
func (a *Accounts) ResetPassword(ctx context.Context, in ResetInput) (User, error) {
	pw, err := a.passwords()
	if err != nil {
		return User{}, err
	}
	if in.Token == "" {
		return User{}, Errorf(CodeBadRequest, "token is required: the one in the reset link")
	}
	if err := CheckPassword(in.Password); err != nil {
		return User{}, err
	}
	th := HashKey(in.Token)
	if _, err := pw.Store.Token(ctx, TokenReset, th, a.now()); err != nil {
		if ErrorCode(err) == CodeNotFound {
			return User{}, Errorf(CodeNotFound, "this reset link is unknown, used or expired: ask an admin for a new one")
		}
		return User{}, err
	}
	hash, err := pw.Hasher.Hash(ctx, in.Password)
	if err != nil {
		return User{}, err
	}
	u, err := pw.Store.ResetPassword(ctx, th, hash, a.now())
	if err != nil {
		if ErrorCode(err) == CodeNotFound {
			return User{}, Errorf(CodeNotFound, "this reset link is unknown, used or expired: ask an admin for a new one")
		}
		return User{}, err
	}
	a.changed(u.ID)
	a.audit.RecordAs(ctx, u.ID, AuditPasswordReset, u.ID, nil)
	return u, nil
}
