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
// cancelGrace. The map is per process: a cancellation that matches no call
// here is handed to the other instances sharing the database (Peers), with
// the canceller's principal; the one that follows the call interrupts its
// turn with that principal (the centre checks it as for any interrupt).

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
	ctx  context.Context // the call's, without its cancel: a peer's interrupt runs in it
	gone time.Time       // when its client left; zero while it is followed
}

// callKeys are the keys a call is found by: its session's (a 2025-11-25
// client) and its user's (a 2026-07-28 client, which has no session).
func callKeys(user, session string, id json.RawMessage) []string {
	id = canonicalID(id)
	if len(id) == 0 {
		return nil
	}
	keys := []string{"u\x00" + user + "\x00" + string(id)}
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
func (c *calls) add(ctx context.Context, keys []string, conv string) func(left bool) {
	if len(keys) == 0 {
		return func(bool) {}
	}
	e := &callEntry{conv: conv, ctx: context.WithoutCancel(ctx)}
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

// find returns the one call under the first key that names exactly one;
// nil for none (or several: a 2026-07-28 id two clients of one user both
// use is ambiguous, and nothing is interrupted).
func (c *calls) find(keys []string) (e *callEntry, ambiguous bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prune(time.Now())
	for _, k := range keys {
		switch es := c.m[k]; len(es) {
		case 0:
		case 1:
			return es[0], false
		default:
			ambiguous = true
		}
	}
	return nil, ambiguous
}

// cancelled acts on a notifications/cancelled: the named call's turn is
// interrupted, here or, when no call here matches, by the instance that
// follows it (Peers). It reports nothing; the notification is answered
// 202.
func (h *Handler) cancelled(r *http.Request, id json.RawMessage) {
	ctx := context.WithoutCancel(r.Context())
	p := agent.PrincipalFrom(ctx)
	session := r.Header.Get(server.HeaderKeySessionID)
	e, ambiguous := h.calls.find(callKeys(p.UserID, session, id))
	if e == nil && !ambiguous && h.cfg.Peers != nil && len(canonicalID(id)) > 0 {
		body, _ := json.Marshal(peerCancel{Principal: p, Session: session, ID: canonicalID(id)})
		sent, err := h.cfg.Peers.Broadcast(ctx, cancelTopic, string(body))
		if err != nil {
			h.log.Warn("mcp_cancel_forward_failed", "request_id", string(id), "err", err)
			return
		}
		if sent {
			h.log.Info("mcp_cancel_forwarded", "request_id", string(id))
			return
		}
	}
	if e == nil {
		h.log.Info("mcp_cancel_unmatched", "request_id", string(id), "ambiguous", ambiguous)
		return
	}
	h.interrupt(ctx, e.conv, id, "")
}

// interrupt interrupts conv's turn as ctx's principal (the centre checks
// it may), for the cancellation of call id.
func (h *Handler) interrupt(ctx context.Context, conv string, id json.RawMessage, by string) {
	if _, err := h.cfg.Runner.Interrupt(ctx, conv); err != nil {
		h.log.Warn("mcp_interrupt_failed", "conversation_id", conv, "err", err)
		return
	}
	if by != "" {
		h.log.Info("mcp_call_cancelled", "conversation_id", conv, "request_id", string(id), "by", by)
		return
	}
	h.log.Info("mcp_call_cancelled", "conversation_id", conv, "request_id", string(id))
}

// Peers carries a cancellation to the other instances sharing the
// database (store.Store on PostgreSQL; on SQLite there are none).
type Peers interface {
	// Broadcast hands body to the other instances' OnBroadcast func of
	// topic; false: there are none.
	Broadcast(ctx context.Context, topic, body string) (bool, error)
	// OnBroadcast sets what is called, without blocking, with another
	// instance's broadcast of topic.
	OnBroadcast(topic string, f func(body string))
}

// cancelTopic is the Peers topic of a forwarded cancellation.
const cancelTopic = "mcp-cancel"

// peerCancel is a cancellation forwarded to the other instances: who sent
// it (authenticated by the instance it reached), its session (2025-11-25)
// and the call's JSON-RPC id.
type peerCancel struct {
	Principal agent.Principal `json:"principal"`
	Session   string          `json:"session,omitempty"`
	ID        json.RawMessage `json:"id"`
}

// peerCancelled acts on a cancellation another instance forwarded: when
// a call this instance follows matches it (the canceller's user, and
// session), its turn is interrupted as the canceller, on a goroutine the
// handler's stream group waits for (the listener that calls it must not
// block). Matching nothing is the common case: every instance but the
// call's gets it.
func (h *Handler) peerCancelled(body string) {
	var pc peerCancel
	if err := json.Unmarshal([]byte(body), &pc); err != nil || len(pc.ID) == 0 {
		h.log.Warn("mcp_peer_cancel_malformed", "err", err)
		return
	}
	e, ambiguous := h.calls.find(callKeys(pc.Principal.UserID, pc.Session, pc.ID))
	if e == nil {
		if ambiguous {
			h.log.Info("mcp_cancel_unmatched", "request_id", string(pc.ID), "ambiguous", true)
		}
		return
	}
	if !h.cfg.Streams.Hold() {
		return // shutting down: the turn ends or is handed over anyway
	}
	go func() {
		defer h.cfg.Streams.Release()
		ctx, cancel := context.WithCancel(agent.WithPrincipal(e.ctx, pc.Principal))
		defer cancel()
		go func() { // Interrupt waits for the turn's end; shutdown does not
			select {
			case <-h.cfg.Streams.Closing():
				cancel()
			case <-ctx.Done():
			}
		}()
		h.interrupt(ctx, e.conv, pc.ID, "peer")
	}()
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
