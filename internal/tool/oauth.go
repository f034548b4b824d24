package tool

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/secret"
)

// OAuth 2.1 to remote MCP servers (DESIGN.md §11.6), through mcp-go's
// OAuthHandler: protected-resource metadata (RFC 9728) leads to the
// authorization server's metadata (RFC 8414, or OpenID discovery); the
// client is the one of the entry's "oauth" object in mcp.json, else one
// registered dynamically (RFC 7591) once per server and kept; a user signs
// in with the authorization code and PKCE, the resource indicator (RFC
// 8707) in every request. The state of a sign-in link is sealed (server,
// user, PKCE verifier, expiry), so the callback needs nothing stored and
// works after a restart and on every instance.
//
// Tokens are per user (the principal of the call) and sealed at rest
// (internal/secret) in the Credentials store; a token is refreshed
// RefreshBefore its expiry, and once more when the server refuses it (it
// was revoked or expired early). A token that cannot be refreshed is
// forgotten: the server shows as auth_required with a fresh link, and
// calls fail with a message naming it.
//
// The supervisor's session (tools listing, and the calls of its user) uses
// the token of the user who signed in last; another user's calls get a
// session of their own, with their token.

// Defaults of OAuthOptions.
const (
	DefaultRefreshBefore = time.Minute
	DefaultSignInTTL     = 15 * time.Minute
)

// OAuthOptions configure signing in to remote MCP servers.
type OAuthOptions struct {
	// Credentials keeps sealed tokens and client registrations across
	// restarts; nil keeps them in memory only.
	Credentials CredentialStore
	// Box seals them, and sign-in states (AGENTIK_SECRET_KEY); nil: a key
	// of this process (secret.Random).
	Box *secret.Box
	// RedirectURL is agentik's GET /agentik/oauth/callback as the user's
	// browser reaches it.
	RedirectURL string
	// RefreshBefore: a token is refreshed this long before it expires.
	RefreshBefore time.Duration
	// SignInTTL: how long a sign-in link stays good.
	SignInTTL time.Duration
	// Clock is the time (time.Now when nil).
	Clock func() time.Time
	// Lock, if set, holds name among the instances that share
	// Credentials (the database: store.Lead) until release: a server's
	// client is registered under it, by one instance, once. nil: this
	// process is the only one.
	Lock func(ctx context.Context, name string) (release func(), err error)
	// Tell, if set, tells the other instances sharing Credentials that
	// user signed in to server (the app broadcasts it; there
	// Manager.SignedIn applies it), so their supervisors use the token
	// too.
	Tell func(server, user string)
}

// CredentialStore keeps sealed credentials of MCP servers: a user's token
// (subject: the user id) and the server's client registration (subject
// ""). The database (package store) implements it.
type CredentialStore interface {
	Credential(ctx context.Context, server, subject string) ([]byte, error) // agent.ErrNotFound when absent
	LatestCredentialSubject(ctx context.Context, server string) (string, error)
	SetCredential(ctx context.Context, server, subject string, data []byte) error
	DeleteCredential(ctx context.Context, server, subject string) error
}

func (o *OAuthOptions) defaults() {
	if o.Box == nil {
		o.Box = secret.Random()
	}
	if o.RefreshBefore <= 0 {
		o.RefreshBefore = DefaultRefreshBefore
	}
	if o.SignInTTL <= 0 {
		o.SignInTTL = DefaultSignInTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}

// OAuthConfig is an entry's "oauth" object in mcp.json: a client
// registered beforehand at the server's authorization server. Without
// one, agentik registers itself (RFC 7591) when the server asks for a
// sign-in.
type OAuthConfig struct {
	ClientID     string
	ClientSecret string // may hold a secret
	Scopes       []string
}

type oauthJSON struct {
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes"`
}

// parseOAuth reads an entry's "oauth" object, its variables expanded.
func parseOAuth(sc *ServerConfig, raw json.RawMessage, x *expander) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	fail := func(field, msg string) error {
		return &ConfigError{Server: sc.Name, Field: "oauth" + field, Msg: msg}
	}
	if sc.Transport == TransportStdio {
		return fail("", "is for remote servers: a stdio server gets no sign-in")
	}
	var j oauthJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return fail("", `must be an object {"clientId", "clientSecret", "scopes"}`)
	}
	var err error
	c := &OAuthConfig{Scopes: j.Scopes}
	if c.ClientID, err = x.expand(j.ClientID); err != nil {
		return fail(".clientId", err.Error())
	}
	if c.ClientSecret, err = x.expand(j.ClientSecret); err != nil {
		return fail(".clientSecret", err.Error())
	}
	x.secret(c.ClientSecret)
	if c.ClientSecret != "" && c.ClientID == "" {
		return fail(".clientId", "is required with clientSecret")
	}
	sc.OAuth = c
	return nil
}

// ErrBadState is a callback whose state agentik did not make, or made for
// a sign-in that has expired.
var ErrBadState = agent.Errorf(agent.CodeBadRequest, "this sign-in link is not valid (it was altered, is from another agentik, or has expired): nothing was stored; start the sign-in again from agentik")

// signInState is what a sign-in link carries, sealed.
type signInState struct {
	Server   string `json:"s"`
	User     string `json:"u"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
}

var stateAD = []byte("agentik mcp oauth state")

// registration is the client agentik is at a server's authorization server.
type registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"auth_method,omitempty"`
	RedirectURI  string `json:"redirect_uri"`
}

// oauthServer is the OAuth state of one remote server.
type oauthServer struct {
	s   *supervisor
	opt *OAuthOptions

	mu       sync.Mutex
	on       bool          // the server wants OAuth: configured, or it answered 401
	prm      string        // the protected-resource metadata URL its 401 named
	reg      *registration // nil: not loaded yet
	tokens   map[string]*transport.Token
	known    map[string]bool // tokens[user] was looked up
	refused  map[string]bool // the server refused the user's access token: refresh it
	user     string          // whose token the supervisor's session uses; "" until known
	users    map[string]*session
	links    *transport.OAuthHandler // discovery done, for sign-in links
	linksFor string                  // the client id links was made with
}

func newOAuthServer(s *supervisor, opt *OAuthOptions) *oauthServer {
	return &oauthServer{s: s, opt: opt, on: s.cfg.OAuth != nil,
		tokens: map[string]*transport.Token{}, known: map[string]bool{}, refused: map[string]bool{}, users: map[string]*session{}}
}

func (o *oauthServer) enabled() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.on
}

func credentialAD(server, subject string) []byte {
	return []byte("agentik mcp credential\x00" + server + "\x00" + subject)
}

func (o *oauthServer) name() string { return o.s.cfg.Name }

// load reads a sealed credential into v; false when there is none.
func (o *oauthServer) load(ctx context.Context, subject string, v any) (bool, error) {
	if o.opt.Credentials == nil {
		return false, nil
	}
	data, err := o.opt.Credentials.Credential(ctx, o.name(), subject)
	if errors.Is(err, agent.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	plain, err := o.opt.Box.Open(data, credentialAD(o.name(), subject))
	if err != nil {
		// Sealed under another AGENTIK_SECRET_KEY: as good as none.
		o.s.log.Warn("mcp_oauth_credential_unreadable", "subject", subject, "err", err)
		return false, nil
	}
	return true, json.Unmarshal(plain, v)
}

func (o *oauthServer) save(ctx context.Context, subject string, v any) error {
	if o.opt.Credentials == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.opt.Credentials.SetCredential(ctx, o.name(), subject, o.opt.Box.Seal(b, credentialAD(o.name(), subject)))
}

// registration returns the client: the configured one, the one registered
// before (for this redirect URL), or an empty one to be registered.
func (o *oauthServer) registration(ctx context.Context) (registration, error) {
	if c := o.s.cfg.OAuth; c != nil && c.ClientID != "" {
		return registration{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURI: o.opt.RedirectURL}, nil
	}
	o.mu.Lock()
	reg := o.reg
	o.mu.Unlock()
	if reg != nil {
		return *reg, nil
	}
	var r registration
	if _, err := o.load(ctx, "", &r); err != nil {
		return registration{}, fmt.Errorf("oauth client: %w", err)
	}
	if r.RedirectURI != o.opt.RedirectURL {
		r = registration{RedirectURI: o.opt.RedirectURL} // registered for another address: again
	}
	if r.ClientID != "" { // none yet is read again: another instance may register it
		o.mu.Lock()
		o.reg = &r
		o.mu.Unlock()
	}
	return r, nil
}

// register registers agentik as a client of the authorization server
// through h, and keeps the registration, unless another instance sharing
// the credentials did first (under Lock, the stored one is read again).
func (o *oauthServer) register(ctx context.Context, h *transport.OAuthHandler, reg registration) (registration, *transport.OAuthHandler, error) {
	if o.opt.Lock != nil {
		release, err := o.opt.Lock(ctx, "mcp-oauth-client "+o.name())
		if err != nil {
			return reg, nil, fmt.Errorf("oauth client: %w", err)
		}
		defer release()
		if got, err := o.registration(ctx); err != nil {
			return reg, nil, err
		} else if got.ClientID != "" {
			return got, o.handler(got, ""), nil
		}
	}
	if err := h.RegisterClient(ctx, "agentik"); err != nil {
		return reg, nil, fmt.Errorf("dynamic client registration: %w", err)
	}
	reg.ClientID, reg.ClientSecret, reg.AuthMethod = h.GetClientID(), h.GetClientSecret(), h.GetTokenEndpointAuthMethod()
	if err := o.save(ctx, "", &reg); err != nil {
		return reg, nil, fmt.Errorf("oauth client: %w", err)
	}
	o.s.log.Info("mcp_oauth_client_registered", "client_id", reg.ClientID)
	o.mu.Lock()
	o.reg = &reg
	o.mu.Unlock()
	return reg, h, nil
}

// config is mcp-go's OAuthConfig for user's requests.
func (o *oauthServer) config(reg registration, user string) transport.OAuthConfig {
	var scopes []string
	if c := o.s.cfg.OAuth; c != nil {
		scopes = c.Scopes
	}
	o.mu.Lock()
	prm := o.prm
	o.mu.Unlock()
	return transport.OAuthConfig{
		ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, TokenEndpointAuthMethod: reg.AuthMethod,
		RedirectURI: o.opt.RedirectURL, Scopes: scopes, PKCEEnabled: true,
		TokenStore:                   &tokenStore{o: o, user: user},
		ProtectedResourceMetadataURL: prm,
		HTTPClient:                   o.s.m.deps.http,
	}
}

// handler is a standalone OAuthHandler for user (discovery, registration,
// the code exchange).
func (o *oauthServer) handler(reg registration, user string) *transport.OAuthHandler {
	h := transport.NewOAuthHandler(o.config(reg, user))
	u, _ := url.Parse(o.s.cfg.URL)
	u.RawQuery, u.Fragment = "", ""
	h.SetBaseURL(u.String())
	return h
}

// httpOptions are the transport options of a session for user: nil when
// the server has not asked for OAuth.
func (o *oauthServer) httpOptions(ctx context.Context, user string) ([]transport.StreamableHTTPCOption, error) {
	if !o.enabled() {
		return nil, nil
	}
	reg, err := o.registration(ctx)
	if err != nil {
		return nil, err
	}
	return []transport.StreamableHTTPCOption{transport.WithHTTPOAuth(o.config(reg, user))}, nil
}

// unauthorized takes note of a 401 from a server that was not known to
// want OAuth: it does now. It reports whether that is news (connect
// again at once, with OAuth).
func (o *oauthServer) unauthorized(err error) bool {
	var ae *transport.AuthorizationRequiredError
	if !errors.As(err, &ae) {
		var oe *transport.OAuthAuthorizationRequiredError
		if !errors.As(err, &oe) {
			return false
		}
		ae = &oe.AuthorizationRequiredError
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if ae.ResourceMetadataURL != "" && sameOrigin(ae.ResourceMetadataURL, o.s.cfg.URL) {
		o.prm = ae.ResourceMetadataURL
	}
	news := !o.on
	o.on = true
	return news
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// authRequired reports whether err is the server asking for a sign-in.
func authRequired(err error) bool {
	return errors.Is(err, transport.ErrOAuthAuthorizationRequired) || errors.Is(err, transport.ErrAuthorizationRequired)
}

// token returns user's token; nil when there is none. With a store it is
// read there every time (a primary-key read per request to the server), so
// that instances on one database see each other's sign-ins and refreshes.
func (o *oauthServer) token(ctx context.Context, user string) (*transport.Token, error) {
	o.mu.Lock()
	if o.known[user] && o.opt.Credentials == nil {
		t := o.tokens[user]
		o.mu.Unlock()
		return t, nil
	}
	o.mu.Unlock()
	var t transport.Token
	ok, err := o.load(ctx, user, &t)
	if err != nil {
		return nil, fmt.Errorf("oauth token: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.opt.Credentials != nil {
		if !ok || t.AccessToken == "" {
			return nil, nil
		}
		return &t, nil
	}
	if !o.known[user] {
		o.known[user] = true
		if ok && t.AccessToken != "" {
			o.tokens[user] = &t
		}
	}
	return o.tokens[user], nil
}

// setToken keeps a token mcp-go got for user (by the code or a refresh),
// its expiry on our clock.
func (o *oauthServer) setToken(ctx context.Context, user string, t *transport.Token) error {
	c := *t
	now := o.opt.Clock()
	switch {
	case c.ExpiresIn > 0:
		c.ExpiresAt = now.Add(time.Duration(c.ExpiresIn) * time.Second)
	case !c.ExpiresAt.IsZero(): // mcp-go's wall clock → ours
		c.ExpiresAt = now.Add(time.Until(c.ExpiresAt))
	}
	o.mu.Lock()
	o.tokens[user], o.known[user], o.refused[user] = &c, true, false
	o.mu.Unlock()
	if o.opt.Credentials == nil {
		o.s.log.Warn("mcp_oauth_token_in_memory", "reason", "AGENTIK_SECRET_KEY is not set: the sign-in lasts until agentik stops")
	}
	if err := o.save(ctx, user, &c); err != nil {
		return fmt.Errorf("oauth token: %w", err)
	}
	return nil
}

// refuse handles the server refusing user's token (a 401, or no token
// that mcp-go could use). The first time, the access token is taken as
// expired, so the next request refreshes it: retry reports that. Then, or
// without a refresh token, the token is forgotten.
func (o *oauthServer) refuse(ctx context.Context, user string) (retry bool) {
	t, _ := o.token(ctx, user)
	o.mu.Lock()
	if t != nil && t.RefreshToken != "" && !o.refused[user] {
		o.refused[user] = true
		o.mu.Unlock()
		o.s.log.Info("mcp_oauth_token_refused", "user", user, "then", "refresh")
		return true
	}
	had := t != nil
	delete(o.tokens, user)
	o.known[user], o.refused[user] = true, false
	o.mu.Unlock()
	if had {
		o.s.log.Warn("mcp_oauth_token_dropped", "user", user, "reason", "refused and not refreshable: the user must sign in again")
		if o.opt.Credentials != nil {
			if err := o.opt.Credentials.DeleteCredential(context.WithoutCancel(ctx), o.name(), user); err != nil {
				o.s.log.Warn("mcp_oauth_token_delete", "err", err)
			}
		}
	}
	return false
}

// signInURL is a consent link for user: the authorization server's
// authorize URL with PKCE, the resource, and a sealed state. It registers
// agentik as a client first when it has no client there yet.
func (o *oauthServer) signInURL(ctx context.Context, user string) (string, error) {
	reg, err := o.registration(ctx)
	if err != nil {
		return "", err
	}
	o.mu.Lock()
	h := o.links
	if h != nil && o.linksFor != reg.ClientID {
		h = nil
	}
	o.mu.Unlock()
	if h == nil {
		h = o.handler(reg, "")
		if reg.ClientID == "" {
			if reg, h, err = o.register(ctx, h, reg); err != nil {
				return "", err
			}
		}
		o.mu.Lock()
		o.links, o.linksFor = h, reg.ClientID
		o.mu.Unlock()
	}
	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		return "", err
	}
	st, _ := json.Marshal(signInState{Server: o.name(), User: user, Verifier: verifier, Expires: o.opt.Clock().Add(o.opt.SignInTTL).Unix()})
	state := base64.RawURLEncoding.EncodeToString(o.opt.Box.Seal(st, stateAD))
	return h.GetAuthorizationURL(ctx, state, transport.GenerateCodeChallenge(verifier))
}

// complete trades the code for user's token.
func (o *oauthServer) complete(ctx context.Context, st signInState, state, code string) error {
	reg, err := o.registration(ctx)
	if err != nil {
		return err
	}
	if reg.ClientID == "" {
		return ErrBadState // no client registered for this redirect: the link is from before
	}
	h := o.handler(reg, st.User)
	h.SetExpectedState(state)
	if err := h.ProcessAuthorizationResponse(ctx, code, state, st.Verifier); err != nil {
		return agent.Errorf(agent.CodeBadRequest, "the authorization server did not give a token: %s", o.s.cfg.redact(err.Error()))
	}
	o.s.log.Info("mcp_oauth_signed_in", "user", st.User)
	o.signedIn(st.User, false)
	if o.opt.Tell != nil {
		o.opt.Tell(o.name(), st.User)
	}
	return nil
}

// signedIn follows user's sign-in, here or (elsewhere) on another
// instance, whose token is in the shared credentials and read again from
// them: the supervisor's session uses it if it waited for one, user's
// own session starts again with it.
func (o *oauthServer) signedIn(user string, elsewhere bool) {
	o.mu.Lock()
	if o.user == "" || o.s.snapshot().State == agent.ToolServerAuthRequired {
		o.user = user
	}
	stale := o.users[user]
	delete(o.users, user)
	if elsewhere {
		delete(o.tokens, user)
		o.known[user], o.refused[user] = false, false
	}
	o.mu.Unlock()
	if stale != nil {
		stale.close()
	}
	o.s.wakeUp()
}

// sessionUser is whose token the supervisor's session uses: the last to
// sign in, or after a restart the one whose token changed last.
func (o *oauthServer) sessionUser(ctx context.Context) string {
	o.mu.Lock()
	u := o.user
	o.mu.Unlock()
	if u != "" {
		return u
	}
	u = agent.LocalUser
	if o.opt.Credentials != nil {
		if got, err := o.opt.Credentials.LatestCredentialSubject(ctx, o.name()); err == nil {
			u = got
		}
	}
	o.mu.Lock()
	if o.user == "" {
		o.user = u
	}
	u = o.user
	o.mu.Unlock()
	return u
}

// switchUser makes the supervisor's session another user's when its own
// user has no token left but someone else signed in (the one whose token
// changed last). Each switch follows a token forgotten, so it ends.
func (o *oauthServer) switchUser(ctx context.Context) bool {
	o.mu.Lock()
	cur := o.user
	o.mu.Unlock()
	if t, _ := o.token(ctx, cur); t != nil {
		return false // it is still there, marked refused: signIn asks again next time
	}
	next := ""
	if o.opt.Credentials != nil {
		next, _ = o.opt.Credentials.LatestCredentialSubject(ctx, o.name())
	} else {
		o.mu.Lock()
		for u, t := range o.tokens {
			if t != nil && u != cur {
				next = u
				break
			}
		}
		o.mu.Unlock()
	}
	if next == "" || next == cur {
		return false
	}
	o.mu.Lock()
	o.user = next
	o.mu.Unlock()
	o.s.log.Info("mcp_oauth_session_user", "user", next, "reason", "the last one's token is gone")
	return true
}

// needSignIn is the error of a call by user that has no usable token.
func (o *oauthServer) needSignIn(ctx context.Context, user string) error {
	link, err := o.signInURL(ctx, user)
	if err != nil {
		return agent.Errorf(agent.CodeToolError, "tool server %q needs a sign-in, and no sign-in link could be made: %s", o.name(), o.s.cfg.redact(err.Error()))
	}
	return &signInNeeded{error: agent.Errorf(agent.CodeToolError, "tool server %q needs you to sign in (authorization required): open %s to sign in, then try again", o.name(), link), link: link}
}

// signInNeeded is needSignIn's error: a per-user server asks for the
// sign-in at link and waits (oauthPerUser).
type signInNeeded struct {
	error
	link string
}

func (e *signInNeeded) Unwrap() error { return e.error }

// userSession is the session of a user other than the supervisor's.
func (o *oauthServer) userSession(ctx context.Context, user string) (*session, error) {
	o.mu.Lock()
	sess := o.users[user]
	o.mu.Unlock()
	if sess != nil {
		select {
		case <-sess.done:
			sess.close()
			sess = nil
		default:
			return sess, nil
		}
	}
	if t, err := o.token(ctx, user); err != nil {
		return nil, err
	} else if t == nil {
		return nil, o.needSignIn(ctx, user)
	}
	d := o.s.m.deps
	opts, err := o.httpOptions(ctx, user)
	if err != nil {
		return nil, err
	}
	d.httpOptions = opts
	sess, _, err = connect(o.s.m.ctx, o.s.cfg, d, TransportHTTP)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	if old := o.users[user]; old != nil {
		o.mu.Unlock()
		sess.close()
		return old, nil
	}
	o.users[user] = sess
	o.mu.Unlock()
	return sess, nil
}

// closeSessions ends the other users' sessions.
func (o *oauthServer) closeSessions() {
	o.mu.Lock()
	ss := o.users
	o.users = map[string]*session{}
	o.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
}

// state returns the server's state for user: auth_required with their
// link when they have no token.
func (o *oauthServer) stateFor(ctx context.Context, ts *agent.ToolServer, user string) {
	if !o.enabled() {
		return
	}
	if t, err := o.token(ctx, user); err == nil && t != nil {
		return
	}
	ts.State = agent.ToolServerAuthRequired
	link, err := o.signInURL(ctx, user)
	if err != nil {
		ts.Error = "no sign-in link could be made: " + o.s.cfg.redact(err.Error())
		return
	}
	ts.SignInURL = link
	ts.Error = "sign in to use this server's tools"
}

// tokenStore is mcp-go's TokenStore of one user at one server. It shows
// mcp-go (which compares with time.Now) an expiry RefreshBefore early, on
// our clock, so that tokens are refreshed before they expire.
type tokenStore struct {
	o    *oauthServer
	user string
}

func (t *tokenStore) GetToken(ctx context.Context) (*transport.Token, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tok, err := t.o.token(ctx, t.user)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, transport.ErrNoToken
	}
	c := t.o.onWallClock(t.user, tok)
	if c.RefreshToken != "" && c.IsExpired() && t.o.opt.Lock != nil {
		// Refreshed here, under the lock the instances share, not by
		// mcp-go, whose one refresh at a time is per process.
		if tok, err = t.o.refreshShared(ctx, t.user, tok); err != nil || tok == nil {
			return nil, cmp.Or(err, transport.ErrNoToken)
		}
		c = t.o.onWallClock(t.user, tok)
	}
	return c, nil
}

// onWallClock is user's token as mcp-go judges it: its expiry moved onto
// the wall clock mcp-go reads, RefreshBefore early, and past when the
// server refused it.
func (o *oauthServer) onWallClock(user string, tok *transport.Token) *transport.Token {
	c := *tok
	o.mu.Lock()
	refused := o.refused[user]
	o.mu.Unlock()
	switch {
	case refused:
		c.ExpiresAt = time.Now().Add(-time.Second)
	case !c.ExpiresAt.IsZero():
		c.ExpiresAt = time.Now().Add(c.ExpiresAt.Sub(o.opt.Clock()) - o.opt.RefreshBefore)
	}
	return &c
}

// refreshShared refreshes user's stale token as one of the instances
// sharing the credentials, under Lock: a refresh another instance
// finished meanwhile (the stored access token is no longer stale's) is
// taken instead of a second one. Two instances refreshing at once spent
// one rotating refresh token twice: the authorization server refused the
// second, whose instance then deleted the user's stored token, the fresh
// one included, and the user had to sign in again. A failed refresh
// returns nil: mcp-go then asks for a sign-in, as when its own fails.
func (o *oauthServer) refreshShared(ctx context.Context, user string, stale *transport.Token) (*transport.Token, error) {
	release, err := o.opt.Lock(ctx, "mcp-oauth-refresh "+o.name()+" "+user)
	if err != nil {
		return nil, fmt.Errorf("oauth token: %w", err)
	}
	defer release()
	cur, err := o.token(ctx, user)
	if err != nil || cur == nil {
		return nil, err
	}
	if cur.AccessToken != stale.AccessToken {
		o.mu.Lock()
		o.refused[user] = false
		o.mu.Unlock()
		o.s.log.Info("mcp_oauth_token_refreshed_elsewhere", "user", user)
		return cur, nil
	}
	reg, err := o.registration(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := o.handler(reg, user).RefreshToken(ctx, cur.RefreshToken); err != nil { // saved by tokenStore.SaveToken
		o.s.log.Warn("mcp_oauth_refresh_failed", "user", user, "err", err)
		return nil, nil
	}
	return o.token(ctx, user)
}

func (t *tokenStore) SaveToken(ctx context.Context, tok *transport.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.o.s.log.Info("mcp_oauth_token_saved", "user", t.user, "expires_in", tok.ExpiresIn)
	return t.o.setToken(ctx, t.user, tok)
}

// CompleteSignIn finishes a sign-in at GET /agentik/oauth/callback: it
// opens the state (ErrBadState for one agentik did not make, or expired),
// trades the code for a token kept for the user the link was made for,
// and returns the server's name. principal is who the callback's request
// is from: a signed-in user other than the link's is refused, so that no
// one can plant their own account in someone else's tools.
func (m *Manager) CompleteSignIn(ctx context.Context, state, code string, principal *agent.Principal) (string, error) {
	if m.opt.OAuth == nil {
		return "", ErrBadState
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		return "", ErrBadState
	}
	plain, err := m.opt.OAuth.Box.Open(raw, stateAD)
	if err != nil {
		return "", ErrBadState
	}
	var st signInState
	if json.Unmarshal(plain, &st) != nil || m.opt.OAuth.Clock().Unix() > st.Expires {
		return "", ErrBadState
	}
	if principal != nil && principal.UserID != st.User {
		return "", agent.Errorf(agent.CodeForbidden, "this sign-in link was made for another user of agentik")
	}
	if code == "" {
		return "", agent.Errorf(agent.CodeBadRequest, "the authorization server sent no code")
	}
	for _, s := range m.list() {
		if s.cfg.Name == st.Server && s.oauth != nil {
			return st.Server, s.oauth.complete(ctx, st, state, code)
		}
	}
	return "", ErrBadState // the server is no longer configured
}

// SignedIn applies a sign-in of user to server made on another instance
// sharing the credentials (OAuthOptions.Tell there): this one reads the
// token from them and its supervisor uses it. An unknown server is
// ignored.
func (m *Manager) SignedIn(server, user string) {
	for _, s := range m.list() {
		if s.cfg.Name == server && s.oauth != nil {
			s.oauth.signedIn(user, true)
		}
	}
}

// ServersFor is Servers as the principal of ctx sees them: a remote
// server they have not signed in to is auth_required with their sign-in
// link.
func (m *Manager) ServersFor(ctx context.Context) []agent.ToolServer {
	servers := m.list()
	out := m.snapshots(servers)
	user := agent.PrincipalFrom(ctx).UserID
	for i, s := range servers {
		if s.oauth != nil && out[i].State != agent.ToolServerDisabled {
			s.oauth.stateFor(ctx, &out[i], user)
		}
	}
	return out
}

// canOAuth reports whether sc may sign in with OAuth: a streamable HTTP
// server whose entry sets no Authorization header of its own.
func canOAuth(sc ServerConfig) bool {
	if sc.Transport != TransportHTTP && sc.Transport != TransportAuto {
		return false
	}
	for k := range sc.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// connectDeps are the Manager's, with OAuth for the session's user.
func (s *supervisor) connectDeps(ctx context.Context) (connectDeps, error) {
	d := s.m.deps
	if s.oauth == nil {
		return d, nil
	}
	opts, err := s.oauth.httpOptions(ctx, s.oauth.sessionUser(ctx))
	d.httpOptions = opts
	return d, err
}

// maxQuick bounds the connects again at once after a 401: one with OAuth
// turned on, one after refreshing the token.
const maxQuick = 2

// signIn handles a connect refused for want of a sign-in: connect again at
// once when OAuth was just found needed or the token may be refreshed;
// else the server is auth_required until someone signs in. It returns
// false when ctx ended.
func (s *supervisor) signIn(ctx context.Context, err error, quick *int, firstDone func()) bool {
	news := s.oauth.unauthorized(err)
	if *quick < maxQuick && (news || s.oauth.refuse(ctx, s.oauth.sessionUser(ctx))) {
		*quick++
		return true
	}
	if *quick >= maxQuick {
		s.oauth.refuse(ctx, s.oauth.sessionUser(ctx))
	}
	if s.oauth.switchUser(ctx) {
		*quick = 0 // another user's token lists the tools; theirs may be refreshed too
		return true
	}
	s.set(agent.ToolServerAuthRequired, nil, errors.New("sign in to use this server's tools"), nil)
	firstDone()
	select {
	case <-ctx.Done():
		return false
	case <-s.wake:
		*quick = 0
		return true
	}
}

// wakeUp ends an auth_required wait: someone signed in.
func (s *supervisor) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// call runs a call that OAuth concerns: one by a user other than the
// session's (on their own session), one by a user who has not signed in,
// and any call the server refuses (refreshed once, then a sign-in link).
// done is false for the calls the supervisor makes as usual.
func (o *oauthServer) call(ctx context.Context, tool string, args json.RawMessage, sess *session, state string) (out agent.ToolOutput, err error, done bool) {
	if !o.enabled() {
		return agent.ToolOutput{}, nil, false
	}
	user := caller(ctx) // peruser.go: the conversation's owner
	own := user == o.sessionUser(ctx)
	if own && sess == nil {
		if state != agent.ToolServerAuthRequired {
			return agent.ToolOutput{}, nil, false
		}
		return agent.ToolOutput{}, o.needSignIn(ctx, user), true
	}
	if !own {
		if sess, err = o.userSession(ctx, user); err != nil {
			if authRequired(err) {
				o.refuse(ctx, user)
				return agent.ToolOutput{}, o.needSignIn(ctx, user), true
			}
			var ae *agent.Error
			if errors.As(err, &ae) {
				return agent.ToolOutput{}, err, true
			}
			return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "%s: %s", tool, o.s.cfg.redact(err.Error())), true
		}
	}
	out, err = sess.call(ctx, tool, args, o.s.callOptions())
	if err != nil && authRequired(err) && o.refuse(ctx, user) {
		out, err = sess.call(ctx, tool, args, o.s.callOptions()) // with the refreshed token
	}
	if err != nil && authRequired(err) {
		o.refuse(ctx, user)
		sess.fail(fmt.Errorf("the server refused the token: %w", err)) // its supervisor turns auth_required
		return agent.ToolOutput{}, o.needSignIn(ctx, user), true
	}
	out, err = o.s.result(ctx, sess, tool, out, err)
	return out, err, true
}
