package agent

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// NewID returns an opaque id: 32 hex digits, of which the first 12 are the
// milliseconds since the Unix epoch and the rest random (the layout of a
// UUIDv7, without its version bits). Ids made one after another sort
// together, so the database's unique indexes over them grow at their end
// instead of touching a random page per insert: a group commit of events
// writes a page or two of the id index rather than one per event.
func NewID() string { return newIDAt(time.Now()) }

func newIDAt(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}
