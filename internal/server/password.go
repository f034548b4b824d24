package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/password"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// Password accounts on the HTTP surface (DESIGN.md §12.3, §12.5):
// agent.Accounts decides (who may invite, sign up, reset); this file reads
// the forms and bodies, sets the session cookie and builds the links.
// Sign-up and reset are public routes (their token is the credential); a
// password sign-in is throttled per client address as bad keys are, and
// a throttled address is refused before its password is even checked.

// withPasswords turns on password accounts in a when the server is given
// their store (Config.PasswordStore).
func withPasswords(cfg Config, a *agent.Accounts) *agent.Accounts {
	ps := cfg.PasswordStore
	if ps == nil {
		return a
	}
	h := cfg.Passwords
	if h == nil {
		h = password.New(password.Costs{})
	}
	return a.WithPasswords(agent.Passwords{Hasher: h, Store: ps, Signup: cfg.Signup})
}

// selfSignup reports whether people may sign up without an invite
// (approval or open): then every route needs a credential, even before
// the first account exists.
func (s *Server) selfSignup() bool {
	return s.cfg.Signup == agent.SignupOpen || s.cfg.Signup == agent.SignupApproval
}

// passwords is the accounts with password accounts on, or unavailable.
func (s *Server) passwords() (*agent.Accounts, error) {
	a, err := s.accounts()
	if err != nil {
		return nil, err
	}
	if a.Signup() == "" {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server's store keeps no password accounts")
	}
	return a, nil
}

// passwordPath reports whether p is a public route of password accounts.
func passwordPath(p string) bool {
	return p == "/signup" || p == "/reset" || p == "/agentik/signup" || p == "/agentik/reset"
}

// passwordForm shows the email and password form on the sign-in page.
func (s *Server) passwordForm(p *web.LoginPage) {
	a, err := s.passwords()
	if err != nil {
		return
	}
	p.Passwords = true
	p.SignUp = a.Signup() == agent.SignupOpen || a.Signup() == agent.SignupApproval
}

// passwordLogin signs in with the sign-in form's email and password.
func (s *Server) passwordLogin(w http.ResponseWriter, r *http.Request, email, pw, next string) {
	a, err := s.passwords()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	client := s.clientAddr(r)
	if d := s.failures.wait(client); d > 0 {
		s.tooManyFailures(w, r, d)
		return
	}
	u, err := a.PasswordSignIn(r.Context(), email, pw)
	if err != nil {
		code := agent.ErrorCode(err)
		if code != agent.CodeUnauthorized && code != agent.CodeForbidden {
			s.writeError(w, r, err)
			return
		}
		if code == agent.CodeUnauthorized {
			s.failures.fail(client)
		}
		s.audit().RecordAs(r.Context(), "", agent.AuditSignInFailed, agent.Shorten(strings.ToLower(strings.TrimSpace(email)), 320), map[string]string{"method": "password", "reason": code})
		s.log.Warn("login_failed", "client", client.String(), "method", "password")
		p := web.LoginPage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Next: localPath(next), Provider: s.oidcName(), Email: email, Error: agent.ErrorMessage(err)}
		s.passwordForm(&p)
		s.renderLoginPage(w, r, status(code), p)
		return
	}
	s.setUserSession(w, r, u.ID, "")
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// baseURL is the scheme and host r reached agentik at, for the links it
// hands out.
func (s *Server) baseURL(r *http.Request) string {
	scheme := "http"
	if s.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

type baseKey struct{}

// withBase keeps r's base URL in its context (guard): an op makes its
// links from it on REST and on the WebSocket alike.
func (s *Server) withBase(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), baseKey{}, s.baseURL(r)))
}

// link is the absolute URL of path (with token) as ctx's request reached
// agentik.
func link(ctx context.Context, path, token string) string {
	base, _ := ctx.Value(baseKey{}).(string)
	return base + path + "?token=" + url.QueryEscape(token)
}

// inviteReply is create_invite's result.
type inviteReply struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// resetReply is create_reset_link's result.
type resetReply struct {
	URL       string    `json:"url"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

var (
	opCreateInvite = accountOp(protocol.OpCreateInvite, http.StatusCreated, func(ctx context.Context, s *Server, a *agent.Accounts, in agent.InviteInput) (any, error) {
		if !s.authOn() {
			return nil, agent.Errorf(agent.CodeBadRequest, "authentication is off (no key or password exists yet), and the first account turns it on: make an admin's key first (POST /agentik/me/keys, or agentik user key local), then invite")
		}
		inv, err := a.Invite(ctx, in)
		if err != nil {
			return nil, err
		}
		return inviteReply{ID: inv.ID, URL: link(ctx, "/signup", inv.Token), Token: inv.Token, ExpiresAt: inv.ExpiresAt}, nil
	})
	opSetPassword = accountOp(protocol.OpSetPassword, 0, func(ctx context.Context, s *Server, a *agent.Accounts, in agent.PasswordChange) (any, error) {
		return a.ChangePassword(ctx, in)
	})
	opCreateResetLink = accountOp(protocol.OpCreateResetLink, http.StatusCreated, func(ctx context.Context, s *Server, a *agent.Accounts, in userRef) (any, error) {
		l, err := a.ResetLink(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		return resetReply{URL: link(ctx, "/reset", l.Token), Token: l.Token, ExpiresAt: l.ExpiresAt}, nil
	})
)

// readJSON decodes r's body into v strictly: bad_request naming the
// problem.
func readJSON(r *http.Request, what string, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return agent.Errorf(agent.CodeBadRequest, "read body: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return inputError(what, b, err)
	}
	return nil
}

// handleAPISignup is POST /agentik/signup: 201 and the User, signed in
// (not when the account waits for approval).
func (s *Server) handleAPISignup(w http.ResponseWriter, r *http.Request) {
	var in agent.SignUpInput
	a, err := s.passwords()
	if err == nil {
		err = readJSON(r, "signup", &in)
	}
	var u agent.User
	if err == nil {
		u, err = a.SignUp(r.Context(), in)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !u.Pending {
		s.setUserSession(w, r, u.ID, "")
	}
	writeJSON(w, http.StatusCreated, u)
}

// handleAPIReset is POST /agentik/reset: the new password is set, every
// session of the user ends, and this client is signed in anew.
func (s *Server) handleAPIReset(w http.ResponseWriter, r *http.Request) {
	var in agent.ResetInput
	a, err := s.passwords()
	if err == nil {
		err = readJSON(r, "reset", &in)
	}
	var u agent.User
	if err == nil {
		u, err = a.ResetPassword(r.Context(), in)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !u.Disabled {
		s.setUserSession(w, r, u.ID, "")
	}
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) renderComponent(w http.ResponseWriter, r *http.Request, code int, c interface {
	Render(context.Context, io.Writer) error
}) {
	pageHeaders(w.Header())
	w.WriteHeader(code)
	if err := c.Render(r.Context(), w); err != nil {
		s.log.Debug("page_render", "path", r.URL.Path, "err", err)
	}
}

func signupPage(token string) web.SignupPage {
	return web.SignupPage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Token: token, MinLen: agent.MinPasswordLen}
}

// handleSignupPage is GET /signup: the sign-up form (an invite link
// carries its token).
func (s *Server) handleSignupPage(w http.ResponseWriter, r *http.Request) {
	if _, err := s.passwords(); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.renderComponent(w, r, http.StatusOK, web.Signup(signupPage(r.URL.Query().Get("token"))))
}

// handleSignup is POST /signup, the sign-up form: the chat, signed in;
// or the form again, saying what to fix.
func (s *Server) handleSignup(w http.ResponseWriter, r *http.Request) {
	a, err := s.passwords()
	if err == nil {
		err = r.ParseForm()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := r.PostForm
	in := agent.SignUpInput{Token: f.Get("token"), Email: f.Get("email"), Password: f.Get("password"), Name: f.Get("name")}
	u, err := a.SignUp(r.Context(), in)
	p := signupPage(in.Token)
	switch {
	case err != nil:
		p.Email, p.Name, p.Error = in.Email, in.Name, agent.ErrorMessage(err)
		s.renderComponent(w, r, status(agent.ErrorCode(err)), web.Signup(p))
	case u.Pending:
		p.Pending = true
		s.renderComponent(w, r, http.StatusCreated, web.Signup(p))
	default:
		s.setUserSession(w, r, u.ID, "")
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}
}

func resetPage(token string) web.ResetPage {
	return web.ResetPage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Token: token, MinLen: agent.MinPasswordLen}
}

// handleResetPage is GET /reset: a reset link's form.
func (s *Server) handleResetPage(w http.ResponseWriter, r *http.Request) {
	if _, err := s.passwords(); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.renderComponent(w, r, http.StatusOK, web.Reset(resetPage(r.URL.Query().Get("token"))))
}

// handleReset is POST /reset, the reset form: the chat, signed in anew
// (every other session of the user ended); or the form again.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	a, err := s.passwords()
	if err == nil {
		err = r.ParseForm()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in := agent.ResetInput{Token: r.PostForm.Get("token"), Password: r.PostForm.Get("password")}
	u, err := a.ResetPassword(r.Context(), in)
	if err != nil {
		p := resetPage(in.Token)
		p.Error = agent.ErrorMessage(err)
		s.renderComponent(w, r, status(agent.ErrorCode(err)), web.Reset(p))
		return
	}
	if u.Disabled {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	s.setUserSession(w, r, u.ID, "")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
