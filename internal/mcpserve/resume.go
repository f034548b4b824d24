package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
	"github.com/agentik/agentik/internal/sse"
)

// A call's stream can break while its turn goes on: the process was
// killed (the next start, or another instance, continues or ends the
// turn), or it stopped gracefully. The MCP client then reconnects with a
// GET carrying the Last-Event-ID of the last event it read. Each progress
// notification's event id is a resume token that holds the conversation,
// the turn's first event, the last event whose progress went out, the
// progress token and the call's JSON-RPC id, so any process serves the
// reconnect without state of its own: it follows the turn again from its
// start (the result holds the whole answer), sends the progress of what
// the client lacks, and answers the call when the turn ends: its answer,
// continued across the restart, or at once its error (interrupted_by_restart
// when it was not continued).

// resumeField is the progress notification's field that carries its
// resume token (mcp-go's event store reads it there, see idOnly).
const resumeField = "agentik_resume"

// resumePrefix starts a resume token.
const resumePrefix = "agentik-call."

// rpcIDHeader carries a call's JSON-RPC id from mcp-go's hook into the
// tool's handler (mcp-go gives the handler the request, not its id).
const rpcIDHeader = "X-Agentik-Rpc-Id"

// resumeToken is what a reconnect resumes.
type resumeToken struct {
	Conv  string            `json:"c"`
	Turn  int64             `json:"t"`
	Seq   int64             `json:"s"`
	Token mcp.ProgressToken `json:"p"`
	ID    json.RawMessage   `json:"i,omitempty"`
}

func (t resumeToken) String() string {
	b, _ := json.Marshal(t)
	return resumePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseResume reads a Last-Event-ID; ok is false for an id that is not a
// resume token.
func parseResume(s string) (t resumeToken, ok bool) {
	rest, found := strings.CutPrefix(s, resumePrefix)
	if !found {
		return t, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || json.Unmarshal(b, &t) != nil || t.Conv == "" || t.Turn <= 0 {
		return resumeToken{}, false
	}
	if len(t.ID) > 0 && !json.Valid(t.ID) {
		t.ID = nil
	}
	return t, true
}

// keepRPCID is mcp-go's before-call hook that hands the call's JSON-RPC
// id to the handler (rpcIDHeader).
func keepRPCID(_ context.Context, id any, m *mcp.CallToolRequest) {
	b, err := json.Marshal(id)
	if err != nil {
		return
	}
	m.Header = m.Header.Clone()
	if m.Header == nil {
		m.Header = http.Header{}
	}
	m.Header.Set(rpcIDHeader, string(b))
}

// resume serves a reconnect with a resume token: the call's stream again,
// from what the client lacks to the call's result. The caller must see
// the conversation (another user's is not found: the call's result says
// so). A shutdown ends the stream without a result, and the client
// reconnects again.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, rt resumeToken) {
	if !h.cfg.Streams.Hold() {
		http.Error(w, "agentik is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer h.cfg.Streams.Release()
	ctx := r.Context()
	h.log.Info("mcp_call_resumed", "conversation_id", rt.Conv, "after_seq", rt.Seq)
	sw := sse.Start(w)
	frame := func(id string, msg any) relay.Frame {
		b, _ := json.Marshal(msg)
		return relay.Frame{ID: id, Event: "message", Data: b}
	}
	t := &turnCall{h: h, ctx: ctx, convID: rt.Conv, turnSeq: rt.Turn, sent: rt.Seq, token: rt.Token, rpcID: rt.ID}
	t.out = func(params map[string]any) relay.Frame {
		id, _ := params[resumeField].(string)
		return frame(id, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationProgress), Params: mcp.NotificationParams{AdditionalFields: params}}})
	}
	res, err := h.resumed(ctx, t, relay.Follow{Sink: relay.SSE(sw), Heartbeat: h.cfg.Heartbeat, Comment: "ping"})
	if errors.Is(err, errGone) {
		return
	}
	if err != nil {
		h.log.Error("mcp_resume_failed", "conversation_id", rt.Conv, "err", err)
		res = mcp.NewToolResultError("agentik could not follow the turn again; read the conversation " + rt.Conv)
	}
	id := rt.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	f := frame("", map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "result": res})
	sw.Event(f.ID, f.Event, f.Data)
	_ = sw.Flush()
}

// resumed follows t's turn from its first event to its end and returns
// the call's result.
func (h *Handler) resumed(ctx context.Context, t *turnCall, fo relay.Follow) (*mcp.CallToolResult, error) {
	if _, err := h.cfg.Conversations.Get(ctx, t.convID); errors.Is(err, agent.ErrNotFound) {
		return mcp.NewToolResultErrorf("no conversation %q: the call cannot be resumed; ask again", agent.Shorten(t.convID, 80)), nil
	} else if err != nil {
		return nil, err
	}
	sub, err := relay.Conversation(ctx, h.cfg.Broker, t.convID, t.turnSeq-1)
	var re *broker.ResyncError
	if errors.As(err, &re) {
		return mcp.NewToolResultErrorf("the turn's events are no longer retained (%s); read the conversation %s", re.Reason, t.convID), nil
	} else if err != nil {
		return nil, err
	}
	defer sub.Close()
	if err := t.follow(sub, fo); err != nil {
		return nil, err
	}
	return t.result(), nil
}

// resumeGet answers a GET that resumes a call, and reports whether it was
// one. A Last-Event-ID that is no resume token (an event of a call that
// named no progress token and asked nothing yet, or of another server) is
// a stream that ends at once with nothing: the client knows then that the
// call cannot be resumed, and fails it (the Go SDK at once) instead of
// retrying to its timeout; a 405 or a 404 would end its whole session.
func (h *Handler) resumeGet(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		return false
	}
	rt, ok := parseResume(id)
	if !ok {
		h.log.Info("mcp_resume_unknown", "last_event_id", agent.Shorten(id, 80))
		sse.Start(w)
		return true
	}
	h.resume(w, r, rt)
	return true
}
