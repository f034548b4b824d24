package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// listCachePages bounds how many pages of the conversation list are kept
// (per version: a new version empties the cache). The sidebar and most
// clients ask for the same first page.
const listCachePages = 16

// listCache keeps encoded pages of the conversation list (the REST
// response body) under the version of the data they were read from
// (agent.Runner.ListVersion), for GET /agentik/conversations and the
// list_conversations op alike: the list is read far more often than it
// changes, and reading and encoding a page of 100 took ~17 times as long
// as sending the bytes. Every commit moves the version, so the next read
// after a create, rename, delete or new message reads the database again.
type listCache struct {
	mu      sync.Mutex
	version uint64
	pages   map[listKey][]byte
}

type listKey struct {
	offset, limit int
	scope         string // agent.Scope: whose conversations the page lists
}

// get returns the page read at version v, if kept.
func (c *listCache) get(v uint64, k listKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != v {
		return nil, false
	}
	b, ok := c.pages[k]
	return b, ok
}

// put keeps a page read at version v (read before the page was): a page
// of an older version than the newest seen is dropped.
func (c *listCache) put(v uint64, k listKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case v < c.version:
		return
	case v > c.version || c.pages == nil:
		c.version, c.pages = v, make(map[listKey][]byte, listCachePages)
	case len(c.pages) >= listCachePages:
		clear(c.pages)
	}
	c.pages[k] = b
}

// listPage returns the encoded page at offset and limit (a
// protocol.ListResult), from the cache when the data did not change since
// it was read. Read it, never change it: it is shared.
func (s *Server) listPage(ctx context.Context, offset, limit int) ([]byte, error) {
	// The projects a member reaches are part of the key: a membership
	// changes no conversation (nor the version), but what the list holds.
	k := listKey{offset, limit, agent.ListScope(ctx) + "\x00" + strings.Join(s.runner.Reach(ctx), "\x00")}
	// The version is read before the data: a commit in between moves it,
	// and the page is then kept under a version that is already old.
	v, cacheable := s.convs.ListVersion()
	if cacheable {
		if b, ok := s.lists.get(v, k); ok {
			return b, nil
		}
	}
	cs, total, err := s.convs.List(ctx, offset, limit)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(protocol.ListResult{Conversations: cs, Total: total})
	if err != nil {
		return nil, err
	}
	if cacheable {
		s.lists.put(v, k, b)
	}
	return b, nil
}
