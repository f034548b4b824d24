package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Accounts on the HTTP surface (DESIGN.md §11.1): who a request is (a
// per-user API key, a user's session cookie) becomes the principal in its
// context; and every request made as a user is registered while it runs,
// so that disabling or deleting the user, changing their role, or revoking
// the key it came with ends it at once: an SSE stream (any protocol's: its
// context is cancelled), a WebSocket (closed with 1008). A change made
// through another process (the database shared by instances) is seen by a
// check every revalidateEvery while such requests run.

// revalidateEvery is how often the credentials of running requests are
// checked again while any runs (another instance's change shows by then).
const revalidateEvery = time.Second

// keysStale is how old the count of keys may be (another instance may
// have made the first).
const keysStale = 2 * time.Second

// touchEvery is how often a key's last_used is written at most.
const touchEvery = time.Minute

// errRevoked is the cause of a request's context ended because its
// credential no longer holds.
var errRevoked = errors.New("signed out: the account was disabled or deleted, its role changed, or its key was revoked")

// cred is what a request was let in with, to check again later.
type cred struct {
	user  string // "" for the implicit admin (no accounts, AGENTIK_API_KEYS)
	role  string
	keyID string // a per-user key's id; "" for a session
	// session: a user's session cookie, of the user's SessionGen gen
	// (a reset ends it).
	session bool
	gen     int
}

// people is the server's state of accounts.
type people struct {
	s        *Server
	accounts *agent.Accounts // nil: no accounts (a store without users)
	groups   *agent.Groups   // nil: no groups (a store without them; group.go)

	keys     atomic.Int64 // keys of active users: with any, authentication is on
	keysSet  atomic.Bool  // keys was read once
	keysRead atomic.Int64 // when keys was last read (Unix ns): another instance's first key shows

	secretOnce sync.Once
	secret     []byte // MAC key of user sessions, kept in the database

	touchMu sync.Mutex
	touched map[string]time.Time

	oidc oidcClient // oidc.go

	liveMu  sync.Mutex
	live    map[*liveReq]struct{}
	polling bool
}

// liveReq is a request made as a user, running.
type liveReq struct {
	cred   cred
	mu     sync.Mutex
	revoke func(why string) // ends it, saying why (a signedOut reason); set by the guard, replaced by a WebSocket
	fired  bool
}

type liveKey struct{}

func newPeople(s *Server) *people {
	p := &people{s: s, accounts: s.cfg.Accounts, live: map[*liveReq]struct{}{}, touched: map[string]time.Time{}}
	if p.accounts == nil {
		if us := s.cfg.Users; us != nil {
			p.accounts = agent.NewAccounts(us, s.cfg.Clock, nil)
		}
	}
	if p.accounts != nil {
		p.accounts = withPasswords(s.cfg, agent.NewAccounts(p.accounts.Store(), s.cfg.Clock, p.changed)) // password.go
		if s.cfg.Runner != nil {
			p.accounts = p.accounts.WithAudit(s.cfg.Runner.Audit()) // audit.go
		}
	}
	if gs := s.cfg.Groups; gs != nil {
		var au *agent.Audit
		if s.cfg.Runner != nil {
			au = s.cfg.Runner.Audit()
		}
		p.groups = agent.NewGroups(gs, s.cfg.Clock, au) // group.go
		if s.cfg.Runner != nil {
			p.groups.Mirror(s.cfg.Runner.ProjectIndex()) // a group's rows in projects (agent/project.go)
		}
	}
	return p
}

// keyCount is the number of keys of active users (read once, then kept
// up to date by changes and the revalidation).
func (p *people) keyCount() int64 {
	if p.accounts == nil {
		return 0
	}
	if !p.keysSet.Load() {
		p.refreshKeys(context.Background())
	} else if now := time.Now().UnixNano(); now-p.keysRead.Load() > int64(keysStale) {
		p.keysRead.Store(now)
		go p.refreshKeys(context.Background())
	}
	return p.keys.Load()
}

func (p *people) refreshKeys(ctx context.Context) {
	n, err := p.accounts.Store().KeyCount(ctx)
	if err != nil {
		p.s.log.Error("key_count_failed", "err", err)
		return
	}
	p.keys.Store(n)
	p.keysRead.Store(time.Now().UnixNano())
	p.keysSet.Store(true)
}

// changed is told by Accounts that userID's access may have changed.
func (p *people) changed(string) {
	p.refreshKeys(context.Background())
	p.revalidate(context.Background())
}

// bearer resolves a per-user API key.
func (p *people) bearer(r *http.Request, key string) (agent.Principal, cred, bool) {
	if p.accounts == nil || !strings.HasPrefix(key, agent.KeyPrefix) {
		return agent.Principal{}, cred{}, false
	}
	u, k, err := p.accounts.Authenticate(r.Context(), key)
	if err != nil {
		if agent.ErrorCode(err) != agent.CodeUnauthorized {
			p.s.log.Error("key_check_failed", "err", err)
		}
		return agent.Principal{}, cred{}, false
	}
	p.touch(k.ID)
	return u.Principal(), cred{user: u.ID, role: u.Role, keyID: k.ID}, true
}

// touch writes a key's last use, at most once per touchEvery.
func (p *people) touch(keyID string) {
	now := p.s.cfg.Clock()
	p.touchMu.Lock()
	last, ok := p.touched[keyID]
	if ok && now.Sub(last) < touchEvery {
		p.touchMu.Unlock()
		return
	}
	if len(p.touched) > 10000 {
		clear(p.touched)
	}
	p.touched[keyID] = now
	p.touchMu.Unlock()
	if err := p.accounts.Store().TouchKey(context.Background(), keyID, now); err != nil {
		p.s.log.Warn("key_touch_failed", "err", err)
	}
}

// A user's session cookie is "u1.<user>.<id>.<expiry>[.<key>].<mac>": the
// user's id, a random id, the Unix second it expires, for a session made
// by typing a key into the sign-in form the key's id (each base64url), and
// an HMAC of them keyed by a random secret kept in the database (the same
// on every instance, across restarts). It holds while its user is active
// and, made from a key, while that key is not revoked: disabling or
// deleting the user, or revoking the key, ends it at once.
const userSessionPrefix = "u1."

// sessionSecret is the MAC key of user sessions: made once, kept in the
// database's meta table.
func (p *people) sessionSecret() []byte {
	p.secretOnce.Do(func() {
		const key = "user_session_secret"
		rv := p.s.revocations
		if rv == nil {
			var b [32]byte
			_, _ = rand.Read(b[:])
			p.secret = b[:]
			return
		}
		ctx := context.Background()
		v, err := rv.Cursor(ctx, key)
		if errors.Is(err, agent.ErrNotFound) {
			var b [32]byte
			_, _ = rand.Read(b[:])
			if err = rv.SetCursor(ctx, key, hex.EncodeToString(b[:])); err == nil {
				v, err = rv.Cursor(ctx, key) // what another instance may have written first
			}
		}
		if b, derr := hex.DecodeString(v); err == nil && derr == nil && len(b) >= 16 {
			p.secret = b
			return
		}
		p.s.log.Error("session_secret_failed", "err", err)
		var b [32]byte
		_, _ = rand.Read(b[:]) // sessions of this process only
		p.secret = b[:]
	})
	return p.secret
}

func (p *people) sessionMAC(body string) []byte { return p.userSessionMAC(body, 0) }

// userSessionMAC is the MAC of a user session's body for a user whose
// agent.User.SessionGen is gen.
func (p *people) userSessionMAC(body string, gen int) []byte {
	m := hmac.New(sha256.New, p.sessionSecret())
	m.Write([]byte("agentik-user-session-v1\x00"))
	m.Write([]byte(body))
	if gen > 0 { // the user's sessions were ended gen times: older cookies fail
		m.Write([]byte("\x00" + strconv.Itoa(gen)))
	}
	return m.Sum(nil)
}

// newSession makes the cookie value of a new session of user id, whose
// agent.User.SessionGen is gen, made from the key keyID ("": from a
// password or a provider's sign-in).
func (p *people) newSession(id string, gen int, keyID string, expires time.Time) string {
	var sid [16]byte
	_, _ = rand.Read(sid[:])
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expires.Unix()))
	enc := base64.RawURLEncoding
	body := userSessionPrefix + enc.EncodeToString([]byte(id)) + "." + enc.EncodeToString(sid[:]) + "." + enc.EncodeToString(exp[:])
	if keyID != "" {
		body += "." + enc.EncodeToString([]byte(keyID))
	}
	return body + "." + enc.EncodeToString(p.userSessionMAC(body, gen))
}

// parseSession reads a user session cookie: its user as the store has
// them now, the session id, the key it was made from ("" for none) and
// its expiry; ok false for anything else, including the session of a
// deleted user and one made before the user's sessions were ended
// (agent.User.SessionGen).
func (p *people) parseSession(ctx context.Context, value string) (u agent.User, id, keyID string, expires time.Time, ok bool) {
	if p.accounts == nil || !strings.HasPrefix(value, userSessionPrefix) {
		return agent.User{}, "", "", time.Time{}, false
	}
	i := strings.LastIndexByte(value, '.')
	body, macText := value[:i], value[i+1:]
	parts := strings.Split(strings.TrimPrefix(body, userSessionPrefix), ".")
	enc := base64.RawURLEncoding
	mac, err := enc.DecodeString(macText)
	if err != nil || len(parts) != 3 && len(parts) != 4 || len(mac) != sha256.Size {
		return agent.User{}, "", "", time.Time{}, false
	}
	user, err1 := enc.DecodeString(parts[0])
	exp, err2 := enc.DecodeString(parts[2])
	var key []byte
	var err3 error
	if len(parts) == 4 {
		key, err3 = enc.DecodeString(parts[3])
	}
	if err1 != nil || err2 != nil || err3 != nil || len(exp) != 8 || len(parts) == 4 && len(key) == 0 {
		return agent.User{}, "", "", time.Time{}, false
	}
	u, err = p.accounts.Store().User(ctx, string(user))
	if err != nil {
		if agent.ErrorCode(err) != agent.CodeNotFound {
			p.s.log.Error("session_check_failed", "err", err)
		}
		return agent.User{}, "", "", time.Time{}, false
	}
	if !hmac.Equal(mac, p.userSessionMAC(body, u.SessionGen)) {
		return agent.User{}, "", "", time.Time{}, false
	}
	return u, parts[1], string(key), time.Unix(int64(binary.BigEndian.Uint64(exp)), 0), true
}

// session resolves a user's session cookie.
func (p *people) session(r *http.Request) (agent.Principal, cred, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return agent.Principal{}, cred{}, false
	}
	u, id, keyID, expires, ok := p.parseSession(r.Context(), c.Value)
	if !ok || u.Disabled || !expires.After(p.s.cfg.Clock()) || p.s.isRevoked(r.Context(), id, expires) {
		return agent.Principal{}, cred{}, false
	}
	if keyID != "" { // made from a key: while the key holds
		st, err := p.accounts.Store().Standing(r.Context(), []string{u.ID})
		if err != nil {
			p.s.log.Error("session_check_failed", "err", err)
			return agent.Principal{}, cred{}, false
		}
		if su, ok := st[u.ID]; !ok || !slices.Contains(su.Keys, keyID) {
			return agent.Principal{}, cred{}, false
		}
	}
	return u.Principal(), cred{user: u.ID, role: u.Role, session: true, gen: u.SessionGen, keyID: keyID}, true
}

// setUserSession signs r's client in as user id, with the key keyID
// ("": a password's or a provider's sign-in): such a session ends with
// the key.
func (s *Server) setUserSession(w http.ResponseWriter, r *http.Request, id, keyID string) {
	gen := 0
	if u, err := s.people.accounts.Store().User(r.Context(), id); err == nil {
		gen = u.SessionGen
	}
	s.audit().RecordAs(r.Context(), id, agent.AuditSignIn, id, map[string]string{"method": signInMethod(r)}) // audit.go
	expires := s.cfg.Clock().Add(s.cfg.SessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.people.newSession(id, gen, keyID, expires), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r),
		Expires: expires, MaxAge: int(s.cfg.SessionTTL / time.Second),
	})
}

// hold registers a request made as a user while it runs: the returned
// request's context ends (cause errRevoked) when its credential stops
// holding; release unregisters it.
func (p *people) hold(r *http.Request, c cred) (*http.Request, func()) {
	if c.user == "" {
		return r, func() {}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	lr := &liveReq{cred: c, revoke: func(string) { cancel(errRevoked) }}
	ctx = context.WithValue(ctx, liveKey{}, lr)
	p.liveMu.Lock()
	p.live[lr] = struct{}{}
	if !p.polling {
		p.polling = true
		go p.poll()
	}
	p.liveMu.Unlock()
	return r.WithContext(ctx), func() {
		p.liveMu.Lock()
		delete(p.live, lr)
		p.liveMu.Unlock()
		cancel(nil)
	}
}

// onRevoke replaces how the request of ctx is ended when its credential
// stops holding (a WebSocket closes with 1008 instead of being cut); f is
// told why (a signedOut reason).
func onRevoke(ctx context.Context, f func(why string)) {
	if lr, ok := ctx.Value(liveKey{}).(*liveReq); ok {
		lr.mu.Lock()
		lr.revoke = f
		lr.mu.Unlock()
	}
}

func (lr *liveReq) fire(why string) {
	lr.mu.Lock()
	if lr.fired {
		lr.mu.Unlock()
		return
	}
	lr.fired = true
	f := lr.revoke
	lr.mu.Unlock()
	go f(why)
}

// poll revalidates the running requests every revalidateEvery while any runs.
func (p *people) poll() {
	t := time.NewTicker(revalidateEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-p.s.closing:
			p.liveMu.Lock()
			p.polling = false
			p.liveMu.Unlock()
			return
		}
		p.liveMu.Lock()
		if len(p.live) == 0 {
			p.polling = false
			p.liveMu.Unlock()
			return
		}
		p.liveMu.Unlock()
		p.refreshKeys(context.Background())
		p.revalidate(context.Background())
	}
}

// revalidate ends the running requests whose credential no longer holds:
// one read of their users' standing (agent.UserStore.Standing), however
// many users they are, so that a hundred users' thousand sockets cost the
// check what one user's do.
func (p *people) revalidate(ctx context.Context) {
	if p.accounts == nil {
		return
	}
	p.liveMu.Lock()
	reqs := make([]*liveReq, 0, len(p.live))
	for lr := range p.live {
		reqs = append(reqs, lr)
	}
	p.liveMu.Unlock()
	if len(reqs) == 0 {
		return
	}
	seen := map[string]bool{}
	var ids []string
	for _, lr := range reqs {
		if !seen[lr.cred.user] {
			seen[lr.cred.user] = true
			ids = append(ids, lr.cred.user)
		}
	}
	standing, err := p.accounts.Standing(ctx, ids)
	if err != nil {
		p.s.log.Error("revalidate_failed", "err", err)
		return // the database did not answer: judged next time
	}
	for _, lr := range reqs {
		c := lr.cred
		st, ok := standing[c.user]
		switch {
		case !ok:
			lr.fire(reasonDisabled)
		case c.keyID != "" && !slices.Contains(st.Keys, c.keyID):
			lr.fire(reasonKeyRevoked)
		case c.session && st.SessionGen != c.gen:
			lr.fire(reasonEnded)
		case st.Role != c.role:
			lr.fire(reasonRoleChanged)
		}
	}
}

// login checks a per-user key typed into the sign-in form.
func (p *people) login(r *http.Request, key string) (agent.User, agent.Key, error) {
	if p.accounts == nil {
		return agent.User{}, agent.Key{}, agent.Errorf(agent.CodeUnauthorized, "no accounts")
	}
	u, k, err := p.accounts.Authenticate(r.Context(), strings.TrimSpace(key))
	if err == nil {
		p.touch(k.ID) // a key typed into the sign-in form is used, as one sent by a program
	}
	return u, k, err
}
