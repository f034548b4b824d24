package agent

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a random opaque id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
