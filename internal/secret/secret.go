// Package secret seals small secrets kept at rest (the OAuth tokens of
// remote MCP servers) with AES-256-GCM under a key derived from the
// operator's AGENTIK_SECRET_KEY by HKDF-SHA256. A sealed value is bound to
// what it is for (the additional data: a table row's key), so a value moved
// to another row does not open.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MinKeyLen is the shortest AGENTIK_SECRET_KEY accepted.
const MinKeyLen = 16

// version leads every sealed value, so that a later key scheme can tell
// its own values from these.
const version = 1

// ErrOpen is a sealed value that does not open: another key, another row,
// or damaged.
var ErrOpen = errors.New("secret: the value does not open with this key (AGENTIK_SECRET_KEY changed?)")

// Box seals and opens values under one key.
type Box struct {
	aead cipher.AEAD
}

// New derives a Box from the operator's secret key (AGENTIK_SECRET_KEY).
func New(key string) (*Box, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("secret: the key must be at least %d characters (got %d)", MinKeyLen, len(key))
	}
	k, err := hkdf.Key(sha256.New, []byte(key), nil, "agentik secret v1", 32)
	if err != nil {
		return nil, fmt.Errorf("secret: derive: %w", err)
	}
	return newBox(k)
}

// Random is a Box under a key made for this process: what it seals opens
// only until the process ends (for running without AGENTIK_SECRET_KEY).
func Random() *Box {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	b, _ := newBox(k)
	return b
}

func newBox(k []byte) (*Box, error) {
	c, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(c)
	if err != nil {
		return nil, err
	}
	return &Box{aead: a}, nil
}

// Seal encrypts plain, bound to ad: version, nonce, ciphertext and tag.
func (b *Box) Seal(plain, ad []byte) []byte {
	out := make([]byte, 1+b.aead.NonceSize(), 1+b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	out[0] = version
	_, _ = rand.Read(out[1:])
	return b.aead.Seal(out, out[1:], plain, ad)
}

// Open decrypts what Seal made with the same key and ad, or fails with
// ErrOpen.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < 1+n+b.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[1:1+n], sealed[1+n:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
