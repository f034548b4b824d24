package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strings"
	"sync"
	"time"
)

// sessionCookie is the cookie the UI gets after signing in with an API key.
const sessionCookie = "agentik_session"

// SessionTTL is how long a sign-in lasts by default.
const SessionTTL = 7 * 24 * time.Hour

// A session cookie is "<id>.<expiry>.<mac>": a random id, the Unix second
// it expires, and an HMAC of both keyed by the API key it was made with.
// Valid sessions survive restarts and work on every instance; removing
// the key from AGENTIK_API_KEYS ends all of its sessions; signing out
// revokes that one session in this process (revoked ids are remembered
// until they would have expired anyway).

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

// session reports whether r carries a live session cookie, and its id.
func (s *Server) session(r *http.Request) (id string, expires time.Time, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", time.Time{}, false
	}
	id, expires, ok = parseSession(c.Value, s.cfg.APIKeys)
	if !ok || !expires.After(s.cfg.Clock()) || s.revoked.has(id) {
		return "", time.Time{}, false
	}
	return id, expires, true
}
