package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
)

// notifications/cancelled interrupts the turn of the call it names
// however it arrives. mcp-go cancels only a request still in its hands,
// on the session it came in; but a client may close the call's stream
// first and send the notification on a POST of its own afterwards (both
// Go SDKs do), and a 2026-07-28 client has no session and sends it
// without the _meta mcp-go asks of every modern message. So agentik keeps
// its own map of the calls it follows, by the caller and the call's
// JSON-RPC id, and answers every cancellation itself: the call's turn is
// interrupted through the Runner (the caller's permission), on whichever
// instance runs it. A call whose client left stays cancellable for
// cancelGrace; the map is per process (a cancellation reaching another
// instance than the call's is accepted and changes nothing).

// cancelGrace is how long after its client left a call can still be
// cancelled (the notification follows the closed stream at once).
const cancelGrace = 30 * time.Second

// calls maps a call (caller, JSON-RPC id) to the conversation it runs in.
type calls struct {
	mu sync.Mutex
	m  map[string][]*callEntry
}

type callEntry struct {
	conv string
	gone time.Time // when its client left; zero while it is followed
}

// callKeys are the keys a call is found by: its session's (a 2025-11-25
// client) and its user's (a 2026-07-28 client, which has no session).
func callKeys(ctx context.Context, session string, id json.RawMessage) []string {
	id = canonicalID(id)
	if len(id) == 0 {
		return nil
	}
	keys := []string{"u\x00" + agent.PrincipalFrom(ctx).UserID + "\x00" + string(id)}
	if session != "" {
		keys = append(keys, "s\x00"+session+"\x00"+string(id))
	}
	return keys
}

// canonicalID writes a JSON-RPC id one way (1 and 1.0 alike); nil for
// none.
func canonicalID(id json.RawMessage) json.RawMessage {
	var v any
	if len(id) == 0 || json.Unmarshal(id, &v) != nil || v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// add records a call; the func it returns ends the record: at once when
// the call returned its result, after cancelGrace when its client left.
func (c *calls) add(keys []string, conv string) func(left bool) {
	if len(keys) == 0 {
		return func(bool) {}
	}
	e := &callEntry{conv: conv}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string][]*callEntry{}
	}
	c.prune(time.Now())
	for _, k := range keys {
		c.m[k] = append(c.m[k], e)
	}
	c.mu.Unlock()
	return func(left bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if left {
			e.gone = time.Now()
			return
		}
		for _, k := range keys {
			c.remove(k, e)
		}
	}
}

func (c *calls) remove(k string, e *callEntry) {
	es := c.m[k]
	for i, x := range es {
		if x == e {
			es = append(es[:i:i], es[i+1:]...)
			break
		}
	}
	if len(es) == 0 {
		delete(c.m, k)
	} else {
		c.m[k] = es
	}
}

// prune drops the calls whose grace ended. c.mu is held.
func (c *calls) prune(now time.Time) {
	for k, es := range c.m {
		for _, e := range es {
			if !e.gone.IsZero() && now.Sub(e.gone) > cancelGrace {
				c.remove(k, e)
			}
		}
	}
}

// find returns the conversation of the one call under the first key that
// names exactly one; "" for none (or several: a 2026-07-28 id two clients
// of one user both use is ambiguous, and nothing is interrupted).
func (c *calls) find(keys []string) (conv string, ambiguous bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prune(time.Now())
	for _, k := range keys {
		switch es := c.m[k]; len(es) {
		case 0:
		case 1:
			return es[0].conv, false
		default:
			ambiguous = true
		}
	}
	return "", ambiguous
}

// cancelled acts on a notifications/cancelled: the named call's turn is
// interrupted. It reports nothing; the notification is answered 202.
func (h *Handler) cancelled(r *http.Request, id json.RawMessage) {
	ctx := context.WithoutCancel(r.Context())
	keys := callKeys(ctx, r.Header.Get(server.HeaderKeySessionID), id)
	conv, ambiguous := h.calls.find(keys)
	if conv == "" {
		h.log.Info("mcp_cancel_unmatched", "request_id", string(id), "ambiguous", ambiguous)
		return
	}
	if _, err := h.cfg.Runner.Interrupt(ctx, conv); err != nil {
		h.log.Warn("mcp_interrupt_failed", "conversation_id", conv, "err", err)
		return
	}
	h.log.Info("mcp_call_cancelled", "conversation_id", conv, "request_id", string(id))
}

// cancelNotification reads a notifications/cancelled body: its request id,
// ok false for any other message.
func cancelNotification(m rpcMessage) (json.RawMessage, bool) {
	if m.Method != string(mcp.MethodNotificationCancelled) || len(m.ID) > 0 {
		return nil, false
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return nil, false
	}
	return p.RequestID, true
}
