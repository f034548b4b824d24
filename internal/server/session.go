package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// sessionCookie is the cookie the UI gets after signing in with an API key.
const sessionCookie = "agentik_session"

// SessionTTL is how long a sign-in lasts by default.
const SessionTTL = 7 * 24 * time.Hour

// A session cookie is "<id>.<expiry>.<mac>": a random id, the Unix second
// it expires, and an HMAC of both keyed by the API key it was made with.
// Valid sessions survive restarts and work on every instance; removing
// the key from AGENTIK_API_KEYS ends all of its sessions; signing out
// revokes that one session: remembered in memory until it would have
// expired anyway, and in the database (see Revocations), so the sign-out
// holds across restarts and on every instance.

// newSession makes the cookie value of a new session for key.
func newSession(key string, expires time.Time) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expires.Unix()))
	enc := base64.RawURLEncoding
	body := enc.EncodeToString(id[:]) + "." + enc.EncodeToString(exp[:])
	return body + "." + enc.EncodeToString(sessionMAC(key, body))
}

func sessionMAC(key, body string) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("agentik-session-v2\x00"))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// parseSession returns the id and expiry of a cookie value made by one of
// keys; ok is false for anything else.
func parseSession(value string, keys []string) (id string, expires time.Time, ok bool) {
	parts := strings.Split(value, ".")
	if len(parts) != 3 {
		return "", time.Time{}, false
	}
	enc := base64.RawURLEncoding
	mac, err := enc.DecodeString(parts[2])
	if err != nil {
		return "", time.Time{}, false
	}
	exp, err := enc.DecodeString(parts[1])
	if err != nil || len(exp) != 8 {
		return "", time.Time{}, false
	}
	body := parts[0] + "." + parts[1]
	for _, key := range keys {
		if hmac.Equal(mac, sessionMAC(key, body)) {
			return parts[0], time.Unix(int64(binary.BigEndian.Uint64(exp)), 0), true
		}
	}
	return "", time.Time{}, false
}

// revoked remembers signed-out session ids until they expire.
type revoked struct {
	mu  sync.Mutex
	ids map[string]time.Time // id → when it expires anyway
}

func (r *revoked) add(id string, expires, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]time.Time{}
	}
	for k, exp := range r.ids {
		if !exp.After(now) {
			delete(r.ids, k)
		}
	}
	r.ids[id] = expires
}

func (r *revoked) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.ids[id]
	return ok
}

// Revocations keeps signed-out session ids in the database's key/value
// meta table. The database (package store) implements it.
type Revocations interface {
	Cursor(ctx context.Context, key string) (string, error)
	SetCursor(ctx context.Context, key, value string) error
}

// revokedKey is the meta key of a signed-out session.
func revokedKey(id string) string { return "session_revoked:" + id }

// revoke ends a session here and, when the database keeps revocations,
// for every instance and after restarts.
func (s *Server) revoke(ctx context.Context, id string, expires time.Time) error {
	s.revoked.add(id, expires, s.cfg.Clock())
	if s.revocations == nil {
		return nil
	}
	return s.revocations.SetCursor(ctx, revokedKey(id), strconv.FormatInt(expires.Unix(), 10))
}

// isRevoked reports whether a session was signed out: here, or (asked of
// the database) by an earlier process or another instance. A database
// that cannot answer counts as revoked: a sign-in is cheap, a session that
// outlives its sign-out is not.
func (s *Server) isRevoked(ctx context.Context, id string, expires time.Time) bool {
	if s.revoked.has(id) {
		return true
	}
	if s.revocations == nil {
		return false
	}
	_, err := s.revocations.Cursor(ctx, revokedKey(id))
	switch {
	case err == nil:
		s.revoked.add(id, expires, s.cfg.Clock())
		return true
	case errors.Is(err, agent.ErrNotFound):
		return false
	default:
		s.log.Error("session_check_failed", "err", err)
		return true
	}
}

// session reports whether r carries a live session cookie, and its id.
func (s *Server) session(r *http.Request) (id string, expires time.Time, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", time.Time{}, false
	}
	id, expires, ok = parseSession(c.Value, s.cfg.APIKeys)
	if !ok || !expires.After(s.cfg.Clock()) || s.isRevoked(r.Context(), id, expires) {
		return "", time.Time{}, false
	}
	return id, expires, true
}
