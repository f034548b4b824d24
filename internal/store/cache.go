package store

import "sync"

// readCacheConversations bounds the conversations a readCache keeps.
const readCacheConversations = 1024

// readCache keeps, on SQLite only, the answers of the reads every
// subscribe makes (Bounds, and Conversation to check the stream's
// conversation) under the Version they were read at: a reconnect storm of
// a thousand clients then costs two queries, not two thousand. On SQLite
// this process owns the file, every change goes through this Store's
// writer (or Prune) and moves Version before it returns, so an answer
// kept under the current Version is exact. On PostgreSQL another
// instance's commit (or prune) is visible before its notification moves
// Version, so nothing is kept.
type readCache struct {
	off bool // PostgreSQL

	mu      sync.Mutex
	version uint64
	bnds    *[2]int64 // pruned, head
	convs   map[string]conversationRow
}

// at empties the cache when v is newer than what it holds and reports
// whether it holds v's answers; c.mu is held.
func (c *readCache) at(v uint64) bool {
	if v > c.version {
		c.version, c.bnds = v, nil
		clear(c.convs)
	}
	return v == c.version
}

func (c *readCache) bounds(v uint64) ([2]int64, bool) {
	if c.off {
		return [2]int64{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at(v) || c.bnds == nil {
		return [2]int64{}, false
	}
	return *c.bnds, true
}

func (c *readCache) putBounds(v uint64, b [2]int64) {
	if c.off {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at(v) {
		c.bnds = &b
	}
}

// conversation returns a kept row; the caller makes its Conversation
// (fresh slices each time: nothing a caller changes reaches the cache).
func (c *readCache) conversation(v uint64, id string) (conversationRow, bool) {
	if c.off {
		return conversationRow{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at(v) {
		return conversationRow{}, false
	}
	r, ok := c.convs[id]
	return r, ok
}

func (c *readCache) putConversation(v uint64, r conversationRow) {
	if c.off {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at(v) {
		return
	}
	if c.convs == nil || len(c.convs) >= readCacheConversations {
		c.convs = make(map[string]conversationRow)
	}
	c.convs[r.ID] = r
}
