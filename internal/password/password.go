// Package password hashes the passwords of password accounts (DESIGN.md
// §12.3) with argon2id, a memory-hard function, and checks them. A hash is
// kept in the PHC string form ($argon2id$v=19$m=…,t=…,p=…$salt$hash), so
// that a hash made with other costs still checks after they change. It
// implements agent.PasswordHasher; nothing else in agentik sees a
// password in clear.
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Costs are argon2id's parameters. The defaults are OWASP's (2024)
// second choice: 19 MiB, two passes, one lane, about 30 ms on one core.
type Costs struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
	// Parallel bounds the hashes computed at once (each holds Memory): a
	// burst of sign-ins waits rather than exhausts the machine's memory.
	Parallel int
}

// Default are the costs of new hashes.
var Default = Costs{Memory: 19 * 1024, Time: 2, Threads: 1, Parallel: 4}

const (
	saltLen = 16
	keyLen  = 32
)

// Hasher hashes and checks passwords with argon2id.
type Hasher struct {
	costs Costs
	slots chan struct{}
}

// New returns a Hasher making hashes of costs c (zero fields take
// Default's).
func New(c Costs) *Hasher {
	if c.Memory == 0 {
		c.Memory = Default.Memory
	}
	if c.Time == 0 {
		c.Time = Default.Time
	}
	if c.Threads == 0 {
		c.Threads = Default.Threads
	}
	if c.Parallel <= 0 {
		c.Parallel = Default.Parallel
	}
	return &Hasher{costs: c, slots: make(chan struct{}, c.Parallel)}
}

// slot waits for a free hashing slot; release frees it.
func (h *Hasher) slot(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("password: %w", context.Cause(ctx))
	}
}

// Hash returns the PHC string of password with a new random salt.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	release, err := h.slot(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: salt: %w", err)
	}
	c := h.costs
	key := argon2.IDKey([]byte(password), salt, c.Time, c.Memory, c.Threads, keyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, c.Memory, c.Time, c.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// errFormat is the error of a stored hash that is not argon2id's PHC string.
var errFormat = errors.New("password: the stored hash is not an argon2id PHC string")

// Verify reports whether password is the one hash was made of. An empty
// hash (an account without a password) is checked against a dummy hash,
// so that it costs the same time as a real one and answers false: a
// sign-in with an unknown email takes as long as with a known one.
func (h *Hasher) Verify(ctx context.Context, hash, password string) (bool, error) {
	release, err := h.slot(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	if hash == "" {
		c := h.costs
		argon2.IDKey([]byte(password), make([]byte, saltLen), c.Time, c.Memory, c.Threads, keyLen)
		return false, nil
	}
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errFormat
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false, errFormat
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 || m > 1<<22 || t > 100 {
		return false, errFormat
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 128 {
		return false, errFormat
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
