package server

import (
	"cmp"
	"crypto/subtle"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/scim"
	"github.com/agentik/agentik/web"
)

// keyValid reports whether k is one of the API keys, in constant time per key.
func (s *Server) keyValid(k string) bool {
	ok := false
	for _, key := range s.cfg.APIKeys {
		if subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 {
			ok = true
		}
	}
	return ok && k != ""
}

// authOn reports whether every route but the public ones needs a
// credential: with AGENTIK_API_KEYS, or once a user has a key of their
// own (people.go).
func (s *Server) authOn() bool {
	return len(s.cfg.APIKeys) > 0 || s.cfg.OIDC != nil || s.cfg.TrustedUserHeader != "" || s.selfSignup() || s.people.keyCount() > 0
}

// principal resolves who r is (DESIGN.md §11.1) from what it carries: an
// API key (Authorization: Bearer) or a session cookie. Without
// authentication everyone is the implicit admin; a key of AGENTIK_API_KEYS
// and its sessions are that admin too; a user's own key or session is that
// user, while they are active. ok is false when r carries no valid
// credential.
func (s *Server) principal(r *http.Request) (agent.Principal, cred, bool) {
	if !s.authOn() {
		return agent.Local, cred{}, true
	}
	if p, c, ok := s.trustedHeader(r); ok { // oidc.go: only from a trusted proxy
		return p, c, true
	}
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		k = strings.TrimSpace(k)
		if s.keyValid(k) {
			return agent.Local, cred{}, true
		}
		if p, c, ok := s.people.bearer(r, k); ok {
			return p, c, true
		}
	}
	if _, _, ok := s.session(r); ok {
		return agent.Local, cred{}, true
	}
	if p, c, ok := s.people.session(r); ok {
		return p, c, true
	}
	return agent.Principal{}, cred{}, false
}

// public paths need no key: the probes (load balancers send none), the
// sign-in page, the bundle and the artifact frame (static, no data); SCIM checks its own token (internal/scim).
func public(r *http.Request) bool {
	p := r.URL.Path
	return scim.Owns(p) || p == "/health" || p == "/ready" || p == "/login" || passwordPath(p) || p == resourceMetadataRoot || p == resourceMetadataPath || p == "/auth/oidc/login" || p == "/auth/oidc/callback" || p == oauthCallbackPath || p == artifactPath || strings.HasPrefix(p, assets.Prefix)
}

// requireAuth resolves r's principal into its context (the Runner decides
// every permission from it), or sends browsers to the sign-in page and API
// clients a 401. A valid key is always let in: only failures are
// throttled, so a client address (a NAT, a proxy) that sent too many bad
// keys gets a 429 for the next bad one until it has waited, and the good
// keys behind it keep working.
func (s *Server) requireAuth(w http.ResponseWriter, r *http.Request) (*http.Request, func(), bool) {
	if public(r) {
		return r, func() {}, true
	}
	if p, c, ok := s.principal(r); ok {
		r, release := s.people.hold(r.WithContext(agent.WithPrincipal(r.Context(), p)), c)
		return r, release, true
	}
	if s.cfg.PublicShares && isSharePage(r) {
		// share.go: anyone holding the link reads it, as nobody (no
		// principal would be the local admin).
		return r.WithContext(agent.WithPrincipal(r.Context(), agent.Principal{})), func() {}, true
	}
	_, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if bearer {
		client := s.clientAddr(r)
		if d := s.failures.wait(client); d > 0 {
			s.tooManyFailures(w, r, d)
			return nil, nil, false
		}
		s.failures.fail(client)
		s.log.Warn("api_key_rejected", "client", client.String())
	}
	if r.Method == http.MethodGet && isPage(r.URL.Path) {
		to := "/login?next=" + url.QueryEscape(r.URL.RequestURI())
		if why := s.signedOut(r); why != "" {
			to += "&reason=" + why
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil, nil, false
	}
	w.Header().Set("WWW-Authenticate", s.resourceChallenge(r)) // protected.go
	s.writeError(w, r, agent.Errorf(agent.CodeUnauthorized, "an API key is required: send Authorization: Bearer <key> (yours, or one of AGENTIK_API_KEYS)"))
	return nil, nil, false
}

// isPage reports whether path is a page of the browser UI, where a missing
// key leads to the sign-in page; every other route (the API, /metrics)
// answers 401 for its client to read.
func isPage(path string) bool {
	switch path {
	case "/", "/people", "/settings", "/agents", "/schedules", "/memory", "/inbox", "/knowledge", "/projects":
		return true
	}
	return strings.HasPrefix(path, "/c/") || strings.HasPrefix(path, "/projects/") || strings.HasPrefix(path, agent.SharePrefix)
}

// Why a browser's access ended (docs/PROTOCOL.md, "Access ends"): the
// reason of a WebSocket's 1008 close ("<reason>: <words>") and of the
// sign-in page's ?reason=, which says it in words (web.SignedOut).
const (
	reasonDisabled    = "account_disabled" // disabled, or deleted
	reasonKeyRevoked  = "key_revoked"      // the key the session (or request) came with
	reasonEnded       = "session_ended"    // signed out, or all sessions ended (a password reset)
	reasonExpired     = "session_expired"
	reasonRoleChanged = "role_changed" // not an end: the next connection has the new role
)

// signedOut says why r's session cookie no longer lets it in; "" when r
// carries none (a first visit). It reads what the cookie names as the
// store has it now, so the sign-in page can say it however the browser
// got there.
func (s *Server) signedOut(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	now := s.cfg.Clock()
	if u, _, keyID, expires, ok := s.people.parseSession(r.Context(), c.Value); ok {
		switch {
		case u.Disabled:
			return reasonDisabled
		case !expires.After(now):
			return reasonExpired
		case keyID != "":
			st, err := s.people.accounts.Store().Standing(r.Context(), []string{u.ID})
			if su, ok := st[u.ID]; err == nil && ok && !slices.Contains(su.Keys, keyID) {
				return reasonKeyRevoked
			}
		}
		return reasonEnded
	}
	if _, expires, ok := parseSession(c.Value, s.cfg.APIKeys); ok && !expires.After(now) {
		return reasonExpired
	}
	return reasonEnded
}

// localPath keeps a post-sign-in redirect on this server: a clean absolute
// path, or "/". Browsers drop tabs and newlines from a Location and read
// "\\" as "/", so "/\t/evil.com" would lead to //evil.com: any control
// character or backslash disqualifies next.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, c := range next {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, code int, next string, failed bool) {
	p := web.LoginPage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Next: localPath(next), Failed: failed, Provider: s.oidcName()}
	if !failed {
		// Why the last access ended: what the cookie it came with says,
		// else what the page that sent it here was told (a 1008's reason).
		p.SignedOut = web.SignedOut(cmp.Or(s.signedOut(r), r.URL.Query().Get("reason")))
	}
	s.passwordForm(&p) // password.go
	s.renderLoginPage(w, r, code, p)
}

func (s *Server) renderLoginPage(w http.ResponseWriter, r *http.Request, code int, p web.LoginPage) {
	pageHeaders(w.Header())
	w.WriteHeader(code)
	if err := web.Login(p).Render(r.Context(), w); err != nil {
		s.log.Debug("page_render", "path", r.URL.Path, "err", err)
	}
}

func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.principal(r); ok {
		http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.renderLogin(w, r, http.StatusOK, r.URL.Query().Get("next"), false)
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "the sign-in form could not be read: %v", err))
		return
	}
	key, next := r.PostForm.Get("key"), r.PostForm.Get("next")
	client := s.clientAddr(r)
	if email, pw := r.PostForm.Get("email"), r.PostForm.Get("password"); email != "" || pw != "" {
		s.passwordLogin(w, r, email, pw, next) // password.go
		return
	}
	if u, k, err := s.people.login(r, key); err == nil {
		s.setUserSession(w, r, u.ID, k.ID)
		http.Redirect(w, r, localPath(next), http.StatusSeeOther)
		return
	}
	if !s.keyValid(key) {
		// The key first: only failures are throttled (see requireAuth).
		if d := s.failures.wait(client); d > 0 {
			s.tooManyFailures(w, r, d)
			return
		}
		s.failures.fail(client)
		s.log.Warn("login_failed", "client", client.String())
		s.audit().RecordAs(r.Context(), "", agent.AuditSignInFailed, "", map[string]string{"method": "key"})
		s.renderLogin(w, r, http.StatusUnauthorized, next, true)
		return
	}
	s.audit().RecordAs(r.Context(), agent.LocalUser, agent.AuditSignIn, agent.LocalUser, map[string]string{"method": "key"})
	expires := s.cfg.Clock().Add(s.cfg.SessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: newSession(key, expires), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r),
		Expires: expires, MaxAge: int(s.cfg.SessionTTL / time.Second),
	})
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// handleLogout ends the session server-side (its cookie stops working even
// if a copy of it was kept) and clears the cookie.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	id, expires, ok := s.session(r)
	if !ok {
		if c, err := r.Cookie(sessionCookie); err == nil {
			_, id, _, expires, ok = s.people.parseSession(r.Context(), c.Value)
		}
	}
	if ok {
		if err := s.revoke(r.Context(), id, expires); err != nil {
			s.log.Error("session_revoke_failed", "err", err) // revoked in this process still
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// tooManyFailures refuses a client address that failed too often; it may
// try again after d.
func (s *Server) tooManyFailures(w http.ResponseWriter, r *http.Request, d time.Duration) {
	secs := int(d.Round(time.Second) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.writeError(w, r, agent.Errorf(agent.CodeRateLimited, "too many failed sign-ins or bad API keys from this address; try again in %d s", secs))
}
