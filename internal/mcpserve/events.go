package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"
)

// idOnly is an mcp-go event store that keeps nothing and only numbers the
// events. Configuring a store switches mcp-go to its ordered delivery,
// which writes every notification of a call on the call's stream before
// its result (without one, a progress notification sent just before the
// result can be dropped); keeping nothing bounds memory. A client that
// reconnects with Last-Event-ID gets 405 (no standalone stream, see
// ServeHTTP); it continues the conversation by its id instead, and the
// turn itself went on.
type idOnly struct{ seq atomic.Int64 }

func (s *idOnly) StoreEvent(context.Context, string, string, json.RawMessage) (string, error) {
	return strconv.FormatInt(s.seq.Add(1), 10), nil
}

func (s *idOnly) ReplayEventsAfter(_ context.Context, _, lastEventID string, _ func(string, json.RawMessage) error) (string, error) {
	return "", fmt.Errorf("%w: %s (agentik keeps no MCP stream for replay)", server.ErrUnknownEventID, lastEventID)
}

func (s *idOnly) PurgeSession(context.Context, string) error { return nil }
