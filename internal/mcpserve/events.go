package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// idOnly is an mcp-go event store that keeps nothing and only names the
// events. Configuring a store switches mcp-go to its ordered delivery,
// which writes every notification of a call on the call's stream before
// its result (without one, a progress notification sent just before the
// result can be dropped); keeping nothing bounds memory. A call's
// progress notification is named by its resume token (resume.go), which
// holds all a reconnect needs, on this process or another; other events
// are numbered (an approval asked of the client carries its call's token
// in its _meta), and a reconnect with such an id gets a stream that ends
// at once (resumeGet).
type idOnly struct{ seq atomic.Int64 }

func (s *idOnly) StoreEvent(_ context.Context, _, _ string, message json.RawMessage) (string, error) {
	var m struct {
		Method string                     `json:"method"`
		Params map[string]json.RawMessage `json:"params"`
	}
	if json.Unmarshal(message, &m) == nil {
		field := m.Params[resumeField] // a progress notification's
		if m.Method == string(mcp.MethodElicitationCreate) {
			var meta map[string]json.RawMessage // an approval asked of the client (turnCall.elicit)
			_ = json.Unmarshal(m.Params["_meta"], &meta)
			field = meta[resumeField]
		}
		var tok string
		if json.Unmarshal(field, &tok) == nil && tok != "" {
			return tok, nil
		}
	}
	return strconv.FormatInt(s.seq.Add(1), 10), nil
}

func (s *idOnly) ReplayEventsAfter(_ context.Context, _, lastEventID string, _ func(string, json.RawMessage) error) (string, error) {
	return "", fmt.Errorf("%w: %s (agentik keeps no MCP stream for replay)", server.ErrUnknownEventID, lastEventID)
}

func (s *idOnly) PurgeSession(context.Context, string) error { return nil }
