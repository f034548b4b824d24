package protocol

import (
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
)

// Frame is any frame the server sends, decoded: a reply, an event, a
// caught_up or a resync. Clients decode every frame into it and switch on
// Type.
type Frame struct {
	Type string `json:"type"`

	// reply
	ID     *string         `json:"id,omitempty"` // nil: the command could not be parsed
	OK     bool            `json:"ok,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *agent.Error    `json:"error,omitempty"`

	// event, caught_up, resync
	Sub    string          `json:"sub,omitempty"`
	Event  json.RawMessage `json:"event,omitempty"` // an AllEvent
	Seq    int64           `json:"seq,omitempty"`   // caught_up
	After  int64           `json:"after,omitempty"` // resync
	Start  *int64          `json:"start,omitempty"` // resync pruned: the retained log starts after it
	Reason string          `json:"reason,omitempty"`
}
