package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/agentik/agentik/internal/agent"
)

// OIDC sign-in (DESIGN.md §11.1): GET /auth/oidc/login starts an
// authorization-code flow with PKCE, state and nonce at the provider found
// by discovery; GET /auth/oidc/callback checks the state (kept in a
// short-lived signed cookie with the nonce and the PKCE verifier), trades
// the code, verifies the ID token (signature by the provider's JWKS, which
// go-oidc fetches again when a key it does not know appears: rotation),
// its nonce, issuer and audience, finds the user by issuer + sub (or,
// invited by email, links them), and signs them in with a user session.
// Every failure shows a page that says why, and creates nothing.

// OIDCConfig configures OIDC sign-in; a nil *OIDCConfig turns it off.
type OIDCConfig struct {
	Issuer       string // AGENTIK_OIDC_ISSUER
	ClientID     string // AGENTIK_OIDC_CLIENT_ID
	ClientSecret string // AGENTIK_OIDC_CLIENT_SECRET ("" for a public client: PKCE alone)
	// RedirectURL is the callback URL registered at the provider
	// (AGENTIK_OIDC_REDIRECT_URL); "": this server's own
	// /auth/oidc/callback as the request reached it.
	RedirectURL string
	Name        string // the provider's name on the sign-in page (AGENTIK_OIDC_NAME); "": its host
	// Signup is "open" (anyone the provider signs in gets a member
	// account) or "invite" (only users an admin made, matched by email).
	Signup     string
	Admins     []string // emails that are admins (AGENTIK_ADMINS)
	AdminGroup string   // a groups claim value that makes an admin (AGENTIK_OIDC_ADMIN_GROUP)
	// TrustUnverifiedEmail trusts an email whose email_verified claim is
	// absent (AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL=on), for a provider that
	// verifies every address and never says so; false is never trusted.
	TrustUnverifiedEmail bool
}

// oidcFlowTTL bounds a sign-in at the provider.
const oidcFlowTTL = 10 * time.Minute

const oidcCookie = "agentik_oidc"

// oidcFlow is what the callback needs of its login: in a cookie signed
// with the session secret.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
	Redirect string `json:"r"`
	Expires  int64  `json:"e"`
}

// oidcClient is the provider, found by discovery once it answers.
type oidcClient struct {
	mu       sync.Mutex
	provider *oidc.Provider
}

func (c *oidcClient) get(ctx context.Context, issuer string) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, issuer)
	if err != nil {
		return nil, err
	}
	c.provider = p
	return p, nil
}

// oidcName is the provider's name on the sign-in page; "" without OIDC.
func (s *Server) oidcName() string {
	o := s.cfg.OIDC
	if o == nil {
		return ""
	}
	if o.Name != "" {
		return o.Name
	}
	if u, err := url.Parse(o.Issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return "OpenID"
}

func randomText() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Server) oidcRedirect(r *http.Request) string {
	if s.cfg.OIDC.RedirectURL != "" {
		return s.cfg.OIDC.RedirectURL
	}
	return s.origin(r) + "/auth/oidc/callback" // protected.go
}

func (s *Server) oauth(p *oidc.Provider, redirect string) *oauth2.Config {
	o := s.cfg.OIDC
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: redirect,
		Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// oidcFail shows why a sign-in failed (nothing was created) and records
// it in the audit log as sign_in_failed with method oidc, a reason (one
// word a filter can group by) and the message: never the code, state,
// nonce, tokens or the client secret, which no message holds.
func (s *Server) oidcFail(w http.ResponseWriter, r *http.Request, code int, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.log.Warn("oidc_sign_in_failed", "client", s.clientAddr(r).String(), "reason", reason, "message", msg)
	s.audit().RecordAs(r.Context(), "", agent.AuditSignInFailed, "", map[string]string{"method": "oidc", "reason": reason, "message": agent.Shorten(msg, 300)})
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/auth/oidc/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
	s.renderError(w, r, code, "Sign-in failed: "+msg)
}

func (s *Server) handleOIDCLogin(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OIDC == nil {
		s.writeError(w, r, agent.Errorf(agent.CodeNotFound, "OIDC sign-in is not configured (AGENTIK_OIDC_ISSUER)"))
		return
	}
	p, err := s.people.oidc.get(r.Context(), s.cfg.OIDC.Issuer)
	if err != nil {
		s.oidcFail(w, r, http.StatusBadGateway, "provider_unreachable", "the provider %s did not answer its discovery document: %v", s.cfg.OIDC.Issuer, err)
		return
	}
	f := oidcFlow{State: randomText(), Nonce: randomText(), Verifier: oauth2.GenerateVerifier(),
		Next: localPath(r.URL.Query().Get("next")), Redirect: s.oidcRedirect(r), Expires: s.cfg.Clock().Add(oidcFlowTTL).Unix()}
	b, _ := json.Marshal(f)
	body := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name: oidcCookie, Value: body + "." + base64.RawURLEncoding.EncodeToString(s.people.sessionMAC("oidc:"+body)),
		Path: "/auth/oidc/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r), MaxAge: int(oidcFlowTTL / time.Second),
	})
	http.Redirect(w, r, s.oauth(p, f.Redirect).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

// flow reads the login's cookie, checking its MAC and expiry.
func (s *Server) flow(r *http.Request) (oidcFlow, error) {
	c, err := r.Cookie(oidcCookie)
	if err != nil {
		return oidcFlow{}, errors.New("no sign-in is in progress in this browser (it expired, was used already, or cookies are off): start again")
	}
	body, macText, ok := strings.Cut(c.Value, ".")
	mac, err := base64.RawURLEncoding.DecodeString(macText)
	if !ok || err != nil || !hmac.Equal(mac, s.people.sessionMAC("oidc:"+body)) {
		return oidcFlow{}, errors.New("the sign-in cookie was altered: start again")
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	var f oidcFlow
	if err != nil || json.Unmarshal(b, &f) != nil {
		return oidcFlow{}, errors.New("the sign-in cookie is unreadable: start again")
	}
	if s.cfg.Clock().Unix() > f.Expires {
		return oidcFlow{}, errors.New("the sign-in took too long and expired: start again")
	}
	return f, nil
}

// oidcClaims are the claims agentik reads, from the ID token and, for
// those it lacks, from the UserInfo endpoint (OIDC Core §5.4: a
// conformant provider may answer the email and profile scopes there only).
type oidcClaims struct {
	Email         string   `json:"email"`
	EmailVerified *bool    `json:"email_verified"`
	Name          string   `json:"name"`
	PreferredName string   `json:"preferred_username"`
	Groups        []string `json:"groups"`
}

// lacks reports whether claims agentik uses are missing from cl (groups
// always: their memberships are synced at each sign-in).
func (cl oidcClaims) lacks(*OIDCConfig) bool {
	return cl.Email == "" || cl.Name == "" && cl.PreferredName == "" || cl.Groups == nil
}

// fill takes from ui the claims cl lacks; an email comes with its own
// email_verified, never with the other source's.
func (cl *oidcClaims) fill(ui oidcClaims) {
	if cl.Email == "" && ui.Email != "" {
		cl.Email, cl.EmailVerified = ui.Email, ui.EmailVerified
	}
	if cl.Name == "" {
		cl.Name = ui.Name
	}
	if cl.PreferredName == "" {
		cl.PreferredName = ui.PreferredName
	}
	if cl.Groups == nil {
		cl.Groups = ui.Groups
	}
}

// userInfo reads the claims the ID token lacks from the provider's
// UserInfo endpoint with the access token; its sub must be the ID
// token's (OIDC Core §5.3.2), else the answer is about someone else.
func (s *Server) userInfo(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, subject string, cl *oidcClaims) error {
	if p.UserInfoEndpoint() == "" || tok.AccessToken == "" {
		return nil
	}
	ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return fmt.Errorf("the provider's UserInfo endpoint did not answer: %w", err)
	}
	if ui.Subject != subject {
		return fmt.Errorf("the provider's UserInfo names another subject (%q) than the ID token (%q)", agent.Shorten(ui.Subject, 60), agent.Shorten(subject, 60))
	}
	var more oidcClaims
	if err := ui.Claims(&more); err != nil {
		return fmt.Errorf("the provider's UserInfo claims are unreadable: %w", err)
	}
	cl.fill(more)
	return nil
}

func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) {
	o := s.cfg.OIDC
	if o == nil {
		s.writeError(w, r, agent.Errorf(agent.CodeNotFound, "OIDC sign-in is not configured (AGENTIK_OIDC_ISSUER)"))
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		s.oidcFail(w, r, http.StatusUnauthorized, "provider_refused", "the provider refused: %s %s", agent.Shorten(e, 80), agent.Shorten(q.Get("error_description"), 200))
		return
	}
	f, err := s.flow(r)
	if err != nil {
		s.oidcFail(w, r, http.StatusBadRequest, "no_flow", "%v", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		s.oidcFail(w, r, http.StatusBadRequest, "state_mismatch", "the state the provider sent back does not match this browser's sign-in (a forged or replayed link): start again")
		return
	}
	p, err := s.people.oidc.get(r.Context(), o.Issuer)
	if err != nil {
		s.oidcFail(w, r, http.StatusBadGateway, "provider_unreachable", "the provider %s did not answer: %v", o.Issuer, err)
		return
	}
	tok, err := s.oauth(p, f.Redirect).Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		s.oidcFail(w, r, http.StatusUnauthorized, "code_refused", "the provider refused the code (it may have been used already or expired): %v", err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		s.oidcFail(w, r, http.StatusBadGateway, "no_id_token", "the provider sent no ID token")
		return
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.ClientID}).Verify(r.Context(), raw)
	if err != nil {
		s.oidcFail(w, r, http.StatusUnauthorized, "id_token_invalid", "the ID token is not valid: %v", err)
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		s.oidcFail(w, r, http.StatusUnauthorized, "nonce_mismatch", "the ID token's nonce does not match this sign-in (a replayed token)")
		return
	}
	var cl oidcClaims
	if err := idt.Claims(&cl); err != nil {
		s.oidcFail(w, r, http.StatusBadGateway, "claims_unreadable", "the ID token's claims are unreadable: %v", err)
		return
	}
	if cl.lacks(o) {
		if err := s.userInfo(r.Context(), p, tok, idt.Subject, &cl); err != nil {
			s.oidcFail(w, r, http.StatusBadGateway, "userinfo_failed", "%v", err)
			return
		}
	}
	u, err := s.oidcUser(r.Context(), idt.Issuer, idt.Subject, cl)
	if err != nil {
		s.oidcFail(w, r, http.StatusForbidden, "account_refused", "%s", agent.ErrorMessage(err))
		return
	}
	// The claim's groups are the user's oidc memberships from now on (a
	// provider that sends no groups claim changes none).
	if g := s.people.groups; g != nil && cl.Groups != nil {
		if err := g.SyncClaim(r.Context(), u.ID, cl.Groups); err != nil {
			s.log.Error("oidc_groups_failed", "user_id", u.ID, "err", err)
			s.oidcFail(w, r, http.StatusInternalServerError, "groups_sync_failed", "your groups could not be synced; try again")
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: "/auth/oidc/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
	s.setUserSession(w, r, u.ID, "")
	s.log.Info("oidc_signed_in", "user_id", u.ID)
	http.Redirect(w, r, localPath(f.Next), http.StatusSeeOther)
}

// oidcUser is the account of the person the provider signed in: by
// issuer + sub; else, invited, the user an admin made with their
// verified email, now linked; else, with open signup, a new member.
// AGENTIK_ADMINS and the admin group make an admin. An email counts only
// with email_verified true (an absent claim only when the operator
// trusts it: AGENTIK_OIDC_TRUST_UNVERIFIED_EMAIL); else it names nobody
// here and is not kept.
func (s *Server) oidcUser(ctx context.Context, issuer, subject string, cl oidcClaims) (agent.User, error) {
	a := s.people.accounts
	if a == nil {
		return agent.User{}, agent.Errorf(agent.CodeUnavailable, "this server's store keeps no accounts")
	}
	o := s.cfg.OIDC
	email := agent.NormalEmail(cl.Email)
	if verified := cl.EmailVerified != nil && *cl.EmailVerified || cl.EmailVerified == nil && o.TrustUnverifiedEmail; !verified {
		email = "" // an address the provider did not verify names nobody here
	}
	admin := agent.EmailIn(o.Admins, email) || o.AdminGroup != "" && slices.Contains(cl.Groups, o.AdminGroup)
	return a.SignIn(ctx, agent.SignIn{Issuer: issuer, Subject: subject, Email: email, Name: firstOf(cl.Name, cl.PreferredName, email, subject),
		Open: o.Signup != "invite", Admin: admin})
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// trustedHeader resolves the user a trusted reverse proxy names in
// AGENTIK_TRUSTED_USER_HEADER (believed only from AGENTIK_TRUSTED_PROXIES).
func (s *Server) trustedHeader(r *http.Request) (agent.Principal, cred, bool) {
	h := s.cfg.TrustedUserHeader
	if h == "" || s.people.accounts == nil || !s.trusted(addrOf(r.RemoteAddr)) {
		return agent.Principal{}, cred{}, false
	}
	v := strings.TrimSpace(r.Header.Get(h))
	if v == "" || len(v) > 320 {
		return agent.Principal{}, cred{}, false
	}
	email := ""
	if strings.Contains(v, "@") {
		email = agent.NormalEmail(v)
	}
	admin := agent.EmailIn(s.cfg.TrustedAdmins, email)
	u, err := s.people.accounts.SignIn(r.Context(), agent.SignIn{Issuer: "header:" + h, Subject: v, Email: email, Name: v, Open: !s.cfg.TrustedInviteOnly, Admin: admin})
	if err != nil {
		if c := agent.ErrorCode(err); c != agent.CodeUnauthorized && c != agent.CodeForbidden {
			s.log.Error("trusted_header_failed", "err", err)
		}
		return agent.Principal{}, cred{}, false
	}
	return u.Principal(), cred{user: u.ID, role: u.Role}, true
}
