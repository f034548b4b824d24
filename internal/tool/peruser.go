package tool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Per-user credentials (DESIGN.md §12.3): an entry with "auth": "per_user"
// runs every call with its caller's own credential, the caller being the
// conversation's owner (agent.ToolHooks.Owner), whichever surface or
// schedule started the turn.
//
//   - A secret (a personal access token…): the entry's headers hold
//     ${user.secret}; each user stores theirs (PUT
//     /agentik/credentials/{server}), sealed with AGENTIK_SECRET_KEY in
//     the mcp_credential table (subject: the user id). Each user gets a
//     session of their own, made on first use with their secret in the
//     headers, closed after PerUserIdle unused or when their secret
//     changes. The supervisor's session, which lists the tools, uses the
//     secret of the user who stored one last (none: those headers left
//     out); no call goes through it.
//   - OAuth (no ${user.secret}): each user signs in (oauth.go, whose
//     tokens and sessions are per user already).
//
// A caller without a credential, or whose credential the server refuses
// (a 401: revoked, expired), is asked for one: the call waits as for an
// elicitation (agent.ElicitCredential, a "credential" inbox item), and
// goes on once the user stores a secret (which accepts the item,
// agent.Inbox.ResolveCredential) or signs in; declined or cancelled, the
// call fails with a message naming the server.

// Values of an entry's "auth".
const (
	AuthShared  = "shared" // the default: one credential for everyone
	AuthPerUser = "per_user"
)

// userSecretVar is what a header of a per-user entry holds for the
// caller's secret; userSecretMark stands for it once the entry's other
// variables are expanded.
const (
	userSecretVar  = "${user.secret}"
	userSecretMark = "\x00agentik-user-secret\x00"
)

// DefaultPerUserIdle closes a user's session of a per-user server unused
// that long.
const DefaultPerUserIdle = 10 * time.Minute

// maxCredentialAsks bounds how many times one call asks for a credential.
const maxCredentialAsks = 3

// MaxSecretLen caps a stored secret.
const MaxSecretLen = 8 << 10

// ErrSecretKeyNeeded: a per-user entry without AGENTIK_SECRET_KEY.
var errSecretKeyNeeded = errors.New(`"auth": "per_user" needs AGENTIK_SECRET_KEY (at least 16 characters) to seal each user's credential: set it, or remove the entry's "auth"`)

func secretAD(server, user string) []byte {
	return []byte("agentik mcp user secret\x00" + server + "\x00" + user)
}

// perUser is the per-user state of a secret entry: each user's session.
type perUser struct {
	s     *supervisor
	mu    sync.Mutex
	conns map[string]*userConn
}

// userConn is one user's session and the secret it was made with.
type userConn struct {
	sess   *session
	secret string
	idle   *time.Timer
}

func newPerUser(s *supervisor) *perUser { return &perUser{s: s, conns: map[string]*userConn{}} }

// caller is whose credential a call uses: the conversation's owner, else
// (outside a turn) the principal.
func caller(ctx context.Context) string {
	if h := agent.ToolHooksFrom(ctx); h != nil && h.Owner != "" {
		return h.Owner
	}
	return agent.PrincipalFrom(ctx).UserID
}

// secret is user's stored secret of the server ("" when none).
func (p *perUser) secret(ctx context.Context, user string) (string, error) {
	o := p.s.m.opt.OAuth
	if user == "" || o == nil || o.Credentials == nil {
		return "", nil
	}
	data, err := o.Credentials.Credential(ctx, p.s.cfg.Name, user)
	if errors.Is(err, agent.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	plain, err := o.Box.Open(data, secretAD(p.s.cfg.Name, user))
	if err != nil {
		p.s.log.Warn("mcp_user_secret_unreadable", "user", user, "err", err)
		return "", nil // sealed under another key: as good as none
	}
	return string(plain), nil
}

// config is the entry with secret in its headers (none: those headers
// left out).
func userConfig(sc ServerConfig, secret string) ServerConfig {
	sc.Headers = maps.Clone(sc.Headers)
	for k, v := range sc.Headers {
		if !strings.Contains(v, userSecretMark) {
			continue
		}
		if secret == "" {
			delete(sc.Headers, k)
			continue
		}
		sc.Headers[k] = strings.ReplaceAll(v, userSecretMark, secret)
	}
	if secret != "" {
		sc.secrets = append(append([]string(nil), sc.secrets...), secret)
		if _, tok, ok := strings.Cut(secret, " "); ok && len(tok) >= minSecretLen {
			sc.secrets = append(sc.secrets, tok)
		}
	}
	return sc
}

// listConfig is the supervisor's entry: with the secret of the user who
// stored one last.
func (p *perUser) listConfig(ctx context.Context) ServerConfig {
	o := p.s.m.opt.OAuth
	secret := ""
	if o != nil && o.Credentials != nil {
		if u, err := o.Credentials.LatestCredentialSubject(ctx, p.s.cfg.Name); err == nil {
			secret, _ = p.secret(ctx, u)
		}
	}
	return userConfig(p.s.cfg, secret)
}

// session is user's session with secret, made on first use.
func (p *perUser) session(ctx context.Context, user, secret string) (*session, error) {
	p.mu.Lock()
	c := p.conns[user]
	if c != nil {
		select {
		case <-c.sess.done:
		default:
			if c.secret == secret {
				c.idle.Reset(p.s.m.opt.PerUserIdle)
				p.mu.Unlock()
				return c.sess, nil
			}
		}
		delete(p.conns, user)
		c.idle.Stop()
	}
	p.mu.Unlock()
	if c != nil {
		c.sess.close()
	}
	sess, _, err := connect(p.s.m.ctx, userConfig(p.s.cfg, secret), p.s.m.deps, p.s.snapshot().Transport)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.conns[user]; old != nil && old.secret == secret {
		go sess.close()
		return old.sess, nil
	}
	nc := &userConn{sess: sess, secret: secret}
	nc.idle = time.AfterFunc(p.s.m.opt.PerUserIdle, func() { p.drop(user, nc) })
	p.conns[user] = nc
	p.s.log.Info("mcp_user_session", "user", user)
	return sess, nil
}

// drop closes user's session (only c, when c is not nil).
func (p *perUser) drop(user string, c *userConn) {
	p.mu.Lock()
	cur := p.conns[user]
	if cur == nil || (c != nil && cur != c) {
		p.mu.Unlock()
		return
	}
	delete(p.conns, user)
	cur.idle.Stop()
	p.mu.Unlock()
	cur.sess.close()
}

// closeAll ends every user's session.
func (p *perUser) closeAll() {
	p.mu.Lock()
	cs := p.conns
	p.conns = map[string]*userConn{}
	p.mu.Unlock()
	for _, c := range cs {
		c.idle.Stop()
		c.sess.close()
	}
}

// call runs a call with its caller's secret, asking for one when there is
// none or the server refuses it.
func (p *perUser) call(ctx context.Context, tool string, args []byte) (agent.ToolOutput, error) {
	user := caller(ctx)
	refused := false
	for asks := 0; ; {
		secret, err := p.secret(ctx, user)
		if err != nil {
			return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "tool server %q: your credential could not be read: %v", p.s.cfg.Name, err)
		}
		if secret != "" {
			sess, err := p.session(ctx, user, secret)
			if err == nil {
				out, cerr := sess.call(ctx, tool, args, p.s.callOptions())
				if cerr == nil || !authRequired(cerr) {
					return p.s.result(ctx, sess, tool, out, cerr)
				}
				err = cerr
			}
			if !authRequired(err) {
				return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "%s: %s", tool, userConfig(p.s.cfg, secret).redact(err.Error()))
			}
			p.drop(user, nil)
			refused = true
			p.s.log.Warn("mcp_user_secret_refused", "user", user)
		}
		if asks == maxCredentialAsks {
			return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "tool server %q still has no credential of yours it accepts", p.s.cfg.Name)
		}
		asks++
		msg := fmt.Sprintf("Tool server %q runs as you: give your secret (a personal access token, say) to go on", p.s.cfg.Name)
		if refused {
			msg = fmt.Sprintf("Tool server %q refused your stored secret (revoked or expired?): give a new one to go on", p.s.cfg.Name)
		}
		if err := askCredential(ctx, p.s.cfg.Name, msg, CredentialPath(p.s.cfg.Name)); err != nil {
			return agent.ToolOutput{}, err
		}
	}
}

// CredentialPath is the route where a user gives their secret of server.
func CredentialPath(server string) string { return "/agentik/credentials/" + server }

// askCredential asks the call's user for a credential of server and waits
// for them: nil once accepted (stored, or signed in: try again).
func askCredential(ctx context.Context, server, msg, link string) error {
	h := agent.ToolHooksFrom(ctx)
	if h == nil || h.Elicit == nil {
		return agent.Errorf(agent.CodeToolError, "%s (%s)", msg, link)
	}
	res, err := h.Elicit(ctx, agent.ElicitRequest{Server: server, Mode: agent.ElicitCredential, Message: msg, URL: link})
	if err != nil {
		return err
	}
	if res.Action != agent.ElicitAccept {
		return agent.Errorf(agent.CodeToolError, "tool server %q runs as its caller, and no credential was given (%s)", server, res.Action)
	}
	return nil
}

// CredentialInfo is one server a user has a credential for.
type CredentialInfo struct {
	Server string `json:"server"`
	Kind   string `json:"kind"` // "secret" or "oauth"
	// Set says whether the caller has one (PerUserCredentials; every
	// entry of UserCredentials has one).
	Set bool `json:"-"`
}

// perUserServer returns the per-user server named name, or not_found.
func (m *Manager) perUserServer(name string) (*supervisor, error) {
	for _, s := range m.list() {
		if s.cfg.Name == name && s.cfg.PerUser && !s.cfg.Disabled {
			return s, nil
		}
	}
	return nil, agent.Errorf(agent.CodeNotFound, "no tool server %q runs as its caller (\"auth\": %q in mcp.json)", agent.Shorten(name, 80), AuthPerUser)
}

// SetUserSecret stores ctx's user's secret of server, sealed, and closes
// their session made with the one before.
func (m *Manager) SetUserSecret(ctx context.Context, server, secret string) error {
	user, err := agent.CredentialOwner(ctx)
	if err != nil {
		return err
	}
	s, err := m.perUserServer(server)
	if err != nil {
		return err
	}
	if !s.cfg.UserSecret {
		return agent.Errorf(agent.CodeBadRequest, "tool server %q signs you in with OAuth: it takes no secret", server)
	}
	if strings.TrimSpace(secret) == "" || len(secret) > MaxSecretLen || strings.ContainsAny(secret, "\r\n\x00") {
		return agent.Errorf(agent.CodeBadRequest, "secret must be 1 to %d bytes on one line", MaxSecretLen)
	}
	o := m.opt.OAuth
	if err := o.Credentials.SetCredential(ctx, server, user, o.Box.Seal([]byte(secret), secretAD(server, user))); err != nil {
		return err
	}
	s.perUser.drop(user, nil)
	s.log.Info("mcp_user_secret_stored", "user", user)
	return nil
}

// DeleteUserSecret forgets ctx's user's credential of server (a secret,
// or an OAuth sign-in) and closes their session.
func (m *Manager) DeleteUserSecret(ctx context.Context, server string) error {
	user, err := agent.CredentialOwner(ctx)
	if err != nil {
		return err
	}
	s, err := m.perUserServer(server)
	if err != nil {
		return err
	}
	if err := m.opt.OAuth.Credentials.DeleteCredential(ctx, server, user); err != nil {
		return err
	}
	if s.perUser != nil {
		s.perUser.drop(user, nil)
	}
	s.log.Info("mcp_user_secret_deleted", "user", user)
	return nil
}

// UserCredentials lists the per-user servers ctx's user has a credential
// for (never the credential).
func (m *Manager) UserCredentials(ctx context.Context) ([]CredentialInfo, error) {
	user, err := agent.CredentialOwner(ctx)
	if err != nil {
		return nil, err
	}
	out := []CredentialInfo{}
	for _, s := range m.list() {
		if !s.cfg.PerUser || s.cfg.Disabled {
			continue
		}
		_, err := m.opt.OAuth.Credentials.Credential(ctx, s.cfg.Name, user)
		if errors.Is(err, agent.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		kind := "oauth"
		if s.cfg.UserSecret {
			kind = "secret"
		}
		out = append(out, CredentialInfo{Server: s.cfg.Name, Kind: kind})
	}
	return out, nil
}

// PerUserCredentials lists every per-user server with whether ctx's user
// has a credential for it (never the credential): the settings page's
// list, which offers to add one where none is set.
func (m *Manager) PerUserCredentials(ctx context.Context) ([]CredentialInfo, error) {
	user, err := agent.CredentialOwner(ctx)
	if err != nil {
		return nil, err
	}
	out := []CredentialInfo{}
	for _, s := range m.servers {
		if !s.cfg.PerUser || s.cfg.Disabled {
			continue
		}
		kind := "oauth"
		if s.cfg.UserSecret {
			kind = "secret"
		}
		_, err := m.opt.OAuth.Credentials.Credential(ctx, s.cfg.Name, user)
		if err != nil && !errors.Is(err, agent.ErrNotFound) {
			return nil, err
		}
		out = append(out, CredentialInfo{Server: s.cfg.Name, Kind: kind, Set: err == nil})
	}
	return out, nil
}

// oauthPerUser runs a call of a per-user OAuth server: a caller who has
// not signed in, or whose token the server refused and could not be
// refreshed, is asked to sign in (the item's link) and the call waits,
// then runs again.
func (s *supervisor) oauthPerUser(ctx context.Context, tool string, args []byte, sess *session, state string) (agent.ToolOutput, error) {
	for asks := 0; ; asks++ {
		out, err, done := s.oauth.call(ctx, tool, args, sess, state)
		if !done {
			if sess == nil {
				return agent.ToolOutput{}, agent.Errorf(agent.CodeToolError, "tool server %q is %s", s.cfg.Name, state)
			}
			out, err = sess.call(ctx, tool, args, s.callOptions())
			return s.result(ctx, sess, tool, out, err)
		}
		var need *signInNeeded
		if !errors.As(err, &need) || asks == maxCredentialAsks {
			return out, err
		}
		msg := fmt.Sprintf("Tool server %q runs as you: sign in to it to go on", s.cfg.Name)
		if err := askCredential(ctx, s.cfg.Name, msg, need.link); err != nil {
			return agent.ToolOutput{}, err
		}
		s.mu.Lock()
		sess, state = s.sess, s.state
		s.mu.Unlock()
	}
}
