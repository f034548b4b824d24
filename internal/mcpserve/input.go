package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
)

// On 2026-07-28 a server sends no requests of its own (SEP-2322): a call
// whose turn waits for a person (a tool call's approval, a tool's
// elicitation) returns an input_required result that asks the client's
// user, keyed by the inbox item's id (agent.InboxID), with a requestState
// that names the turn. The client retries the call with the answers; the
// retry answers the items through the inbox (agent.Inbox.Answer: the
// first answer on any surface wins, a later one is a conflict and
// changes nothing) and follows the same turn on from where the first call
// left it. An item the client cancels is left to the other surfaces (the
// retry waits for it); a client that does not elicit is not asked (the
// call waits, as on 2025-11-25 without elicitation). The turn never waits
// on the client: it goes on waiting for the item, answerable anywhere,
// whether or not the client retries.

// statePrefix starts a requestState agentik gives.
const statePrefix = "agentik-turn."

// inputWait is something the turn waits for, as asked of the client.
type inputWait struct {
	params mcp.ElicitationParams
}

// want records that the turn waits for item id.
func (t *turnCall) want(id string, p mcp.ElicitationParams) {
	if t.waits == nil {
		t.waits = map[string]inputWait{}
	}
	t.waits[id] = inputWait{params: p}
}

// askable reports whether something waits that the client may be asked.
func (t *turnCall) askable() bool {
	if !t.mrtr {
		return false
	}
	for id := range t.waits {
		if !t.skip[id] {
			return true
		}
	}
	return false
}

// inputRequired is the input_required result asking the client for what
// waits.
func (t *turnCall) inputRequired() *mcp.CallToolResult {
	state := resumeToken{Conv: t.convID, Turn: t.turnSeq, Seq: t.seq}
	b, _ := json.Marshal(state)
	res := t.inputRequests(statePrefix + base64.RawURLEncoding.EncodeToString(b))
	t.h.log.Info("mcp_input_required", "conversation_id", t.convID, "items", len(res.InputRequests))
	return res
}

// inputRequests is the input_required result that asks for what waits
// (but what the client cancelled), with requestState state.
func (t *turnCall) inputRequests(state string) *mcp.CallToolResult {
	ib := server.NewInputRequestBuilder(state)
	ids := make([]string, 0, len(t.waits))
	for id := range t.waits {
		if !t.skip[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		ib.Elicit(id, t.waits[id].params)
	}
	return ib.ToolResult()
}

// parseState reads a requestState; ok is false for one agentik never gave.
func parseState(s string) (st resumeToken, ok bool) {
	rest, found := strings.CutPrefix(s, statePrefix)
	if !found {
		return st, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || json.Unmarshal(b, &st) != nil || st.Conv == "" || st.Turn <= 0 || st.Seq < 0 {
		return resumeToken{}, false
	}
	return st, true
}

// retry serves the retry of a call that returned input_required: the
// answers go to the inbox, then the call follows the turn on.
func (h *Handler) retry(ctx context.Context, slug string, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	st, ok := parseState(req.Params.RequestState)
	if !ok {
		return mcp.NewToolResultError("requestState is not one agentik gave: retry with the requestState of the input_required result, unchanged"), nil
	}
	c, err := h.cfg.Runner.Conversation(ctx, st.Conv)
	if errors.Is(err, agent.ErrNotFound) {
		return mcp.NewToolResultErrorf("no conversation %q: the call cannot go on; ask again", agent.Shorten(st.Conv, 80)), nil
	} else if err != nil {
		return nil, err
	}
	if of := agentOf(c); of != slug {
		return mcp.NewToolResultErrorf("this requestState is of a call to %s, not %s", toolName(of), toolName(slug)), nil
	}
	t := h.newCall(ctx, req, st.Conv, st.Turn)
	t.sent = st.Seq // the first call sent the progress up to there
	t.skip = map[string]bool{}
	h.answer(ctx, t, req.Params.InputResponses)
	return h.call(ctx, t, "")
}

// answer gives the client's answers to the inbox. An item of another
// conversation than the call's is ignored; one answered already (on any
// surface) is a conflict, and the first answer stands.
func (h *Handler) answer(ctx context.Context, t *turnCall, responses mcp.InputResponses) {
	inbox := agent.Inbox{Runner: h.cfg.Runner}
	ctx = context.WithoutCancel(ctx) // an answer given is recorded even if the client leaves
	for id := range responses {
		kind, _, _ := strings.Cut(id, ".")
		if !strings.HasPrefix(id, kind+"."+t.convID+".") {
			h.log.Info("mcp_input_ignored", "conversation_id", t.convID, "item", agent.Shorten(id, 120))
			continue
		}
		res := server.ElicitationResponse(responses, id)
		if res == nil {
			continue
		}
		var a agent.InboxAnswer
		switch kind {
		case agent.InboxApproval:
			var decided bool
			if a, decided = approvalAnswer(res.ElicitationResponse); !decided {
				t.skip[id] = true
				continue
			}
		case agent.InboxElicitation:
			if res.Action == mcp.ElicitationResponseActionCancel {
				t.skip[id] = true // left to the other surfaces, as over 2025-11-25
				continue
			}
			a.Action = string(res.Action)
			if res.Content != nil {
				a.Content, _ = json.Marshal(res.Content)
			}
		default:
			continue
		}
		err := inbox.Answer(ctx, id, a)
		switch {
		case err == nil:
			h.log.Info("mcp_input_answered", "conversation_id", t.convID, "item", id)
		case agent.ErrorCode(err) == agent.CodeConflict:
			h.log.Info("mcp_input_already_answered", "conversation_id", t.convID, "item", id, "err", err)
		default:
			h.log.Warn("mcp_input_failed", "conversation_id", t.convID, "item", id, "err", err)
			t.skip[id] = true // not asked again in a loop: left to the other surfaces
		}
	}
}

// elicitParams is the elicitation a tool's request for input asks of the
// client.
func elicitParams(ev *agent.Event) mcp.ElicitationParams {
	p := mcp.ElicitationParams{Mode: ev.Mode, Message: ev.Ask, URL: ev.URL}
	if p.Mode == "" {
		p.Mode = mcp.ElicitationModeForm
	}
	if len(ev.Schema) > 0 {
		p.RequestedSchema = ev.Schema
	} else if p.Mode == mcp.ElicitationModeForm {
		p.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	if p.Mode == mcp.ElicitationModeURL {
		p.ElicitationID = ev.RequestID
	}
	return p
}
