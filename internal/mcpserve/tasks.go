package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
)

// The tasks extension (io.modelcontextprotocol/tasks, the 2026-07-28
// revision's SEP-2663): a 2026-07-28 tools/call of an ask_ tool whose
// request declares the extension in its _meta capabilities is followed
// for Config.TaskAfter; a turn that ends by then is answered as ever,
// one that runs on (or waits for a person) is answered with a task
// handle (resultType "task") and the client polls tasks/get: the text so
// far as the statusMessage, what waits for a person as inputRequests
// (keyed by inbox item, as the input_required result of input.go),
// answered by tasks/update, and at the end the call's result. mcp-go
// (v1.2.1 and v1.6.0) has only 2025-11-25's tasks, kept in its process's
// memory and bound to nothing when a request has no session, so agentik
// answers these requests itself, before mcp-go (as notifications/cancelled).
//
// A task is a turn: its id names the conversation and the turn's first
// event, and each request reads the turn's stored events through the
// Runner and the Broker with the caller's principal. Nothing is kept in
// the process: any instance, or this one after a restart, answers; the
// caller must see the conversation (another user's task is the extension's
// not-found error, like an id agentik never gave).

// taskExtension is the extension's id in capabilities.
const taskExtension = "io.modelcontextprotocol/tasks"

// taskPrefix starts a task id agentik gives.
const taskPrefix = "agentik-task."

// DefaultTaskAfter is how long a call that may become a task is followed
// before it does.
const DefaultTaskAfter = 2 * time.Second

// taskPollMs is the polling interval a task suggests.
const taskPollMs = 1000

// relatedTaskKey names, in a task handle's _meta, the task it is: for a
// client whose SDK reads a tools/call result as a CallToolResult (the
// official Go SDK has no task types; its CallToolResult keeps _meta).
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// taskRef is what a task id holds.
type taskRef struct {
	Conv string `json:"c"`
	Turn int64  `json:"t"`
}

func (r taskRef) String() string {
	b, _ := json.Marshal(r)
	return taskPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseTask reads a task id; ok is false for one agentik never gave.
func parseTask(s string) (r taskRef, ok bool) {
	rest, found := strings.CutPrefix(s, taskPrefix)
	if !found {
		return r, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || json.Unmarshal(b, &r) != nil || r.Conv == "" || r.Turn <= 0 {
		return taskRef{}, false
	}
	return r, true
}

// taskRequest is what the task methods (and a tools/call) carry.
type taskRequest struct {
	Meta           *mcp.Meta          `json:"_meta"`
	Name           string             `json:"name"`
	Arguments      map[string]any     `json:"arguments"`
	RequestState   string             `json:"requestState"`
	TaskID         string             `json:"taskId"`
	InputResponses mcp.InputResponses `json:"inputResponses"`
}

// task is the extension's Task with its status's fields: a
// CreateTaskResult (resultType "task") or a tasks/get result ("complete").
type task struct {
	ResultType     mcp.ResultType      `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          *int64              `json:"ttlMs"` // null: kept while the turn's events are
	PollIntervalMs int64               `json:"pollIntervalMs"`
	InputRequests  mcp.InputRequests   `json:"inputRequests,omitempty"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Meta           map[string]any      `json:"_meta,omitempty"`
}

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskCancelled     = "cancelled"
)

// serveTask answers a POST that is the extension's: a task method, or a
// tools/call of an ask_ tool that declares the extension. It reports
// whether it did; anything else (another revision, a request mcp-go
// refuses, an MRTR retry) is mcp-go's.
func (h *Handler) serveTask(w http.ResponseWriter, r *http.Request, m rpcMessage) bool {
	switch m.Method {
	case string(mcp.MethodToolsCall), "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return false
	}
	var p taskRequest
	if json.Unmarshal(m.Params, &p) != nil || len(m.ID) == 0 {
		return false
	}
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" || v != p.Meta.ProtocolVersion() || !mcp.IsModernProtocol(v) || !h.http.SupportsProtocolVersion(v) ||
		r.Header.Get(mcp.HeaderLastEventID) != "" {
		return false // mcp-go validates it, and answers
	}
	caps := p.Meta.ClientCapabilities()
	declared := false
	if caps != nil {
		_, declared = caps.Extensions[taskExtension]
	}
	ctx := r.Context()
	if m.Method == string(mcp.MethodToolsCall) {
		if !declared || p.RequestState != "" || !strings.HasPrefix(p.Name, toolPrefix) {
			return false
		}
		as, err := h.cfg.Agents(ctx)
		if err != nil {
			return false
		}
		for _, a := range as {
			if toolName(a.Slug) == p.Name {
				h.callTask(w, r, m.ID, a.Slug, p, caps)
				return true
			}
		}
		return false // not the caller's: mcp-go's unknown tool
	}
	if !declared {
		writeRPC(w, m.ID, nil, &rpcError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
			Message: m.Method + " is the tasks extension's: declare " + taskExtension + " in the request's _meta clientCapabilities.extensions",
			Data:    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{taskExtension: map[string]any{}}}}})
		return true
	}
	ref, ok := parseTask(p.TaskID)
	if !ok {
		writeRPC(w, m.ID, nil, noTask(p.TaskID))
		return true
	}
	elicits := caps.Elicitation != nil
	switch m.Method {
	case "tasks/get":
		t, e := h.openTask(ctx, ref, p.TaskID, elicits)
		if e != nil {
			writeRPC(w, m.ID, nil, e)
			return true
		}
		writeRPC(w, m.ID, t.task(p.TaskID, mcp.ResultTypeComplete), nil)
	case "tasks/update":
		t, e := h.openTask(ctx, ref, p.TaskID, true) // what it answers is what waits
		if e != nil {
			writeRPC(w, m.ID, nil, e)
			return true
		}
		// Only what the task waits for now is answered (the extension's
		// keys of no outstanding request are ignored).
		responses := mcp.InputResponses{}
		for id, res := range p.InputResponses {
			if _, waits := t.waits[id]; waits && !t.ended {
				responses[id] = res
			} else {
				h.log.Info("mcp_input_ignored", "conversation_id", ref.Conv, "item", agent.Shorten(id, 120))
			}
		}
		t.skip = map[string]bool{}
		h.answer(ctx, t, responses) // input.go: through the inbox
		writeRPC(w, m.ID, mcp.Result{ResultType: mcp.ResultTypeComplete}, nil)
	case "tasks/cancel":
		t, e := h.openTask(ctx, ref, p.TaskID, elicits)
		if e != nil {
			writeRPC(w, m.ID, nil, e)
			return true
		}
		if !t.ended {
			h.interrupt(context.WithoutCancel(ctx), ref.Conv, m.ID, "tasks/cancel")
		}
		writeRPC(w, m.ID, mcp.Result{ResultType: mcp.ResultTypeComplete}, nil)
	}
	return true
}

// callTask serves a tools/call that may become a task: the turn starts
// and is followed for TaskAfter; then its result, or its task.
func (h *Handler) callTask(w http.ResponseWriter, r *http.Request, id json.RawMessage, slug string, p taskRequest, caps *mcp.ClientCapabilities) {
	ctx := r.Context()
	convID, res, bad, err := h.start(ctx, slug, p.Arguments)
	if err != nil {
		h.log.Error("mcp_call_failed", "err", err)
		writeRPC(w, id, nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "agentik could not start the turn"})
		return
	}
	if bad != nil {
		bad.ResultType = mcp.ResultTypeComplete
		writeRPC(w, id, bad, nil)
		return
	}
	t := &turnCall{h: h, ctx: ctx, convID: convID, turnSeq: res.Seq, answerID: res.MessageID, rpcID: id,
		modern: true, mrtr: caps.Elicitation != nil, after: h.cfg.TaskAfter}
	sub, err := relay.Conversation(ctx, h.cfg.Broker, convID, res.Seq-1)
	if err != nil {
		h.log.Error("mcp_call_failed", "conversation_id", convID, "err", err)
		writeRPC(w, id, nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "agentik could not follow the turn; read the conversation " + convID})
		return
	}
	defer sub.Close()
	end := h.calls.add(ctx, callKeys(agent.PrincipalFrom(ctx).UserID, "", id), convID) // cancel.go
	err = t.follow(sub, relay.Follow{})
	end(errors.Is(err, errGone))
	switch {
	case errors.Is(err, errGone) && ctx.Err() != nil:
		return // the client left: the turn was interrupted
	case errors.Is(err, errGone) || errors.Is(err, errLong) || (err == nil && t.inputNeeded):
		// Running long, waiting for a person, or this server stops (the
		// turn goes on or is continued where it starts again): a task.
		ref := taskRef{Conv: convID, Turn: res.Seq}.String()
		tk := t.task(ref, mcp.ResultType("task"))
		tk.Meta = map[string]any{relatedTaskKey: map[string]any{"taskId": ref}}
		tk.InputRequests = nil // a handle is a Task; tasks/get lists them
		h.log.Info("mcp_task_created", "conversation_id", convID, "status", tk.Status)
		writeRPC(w, id, tk, nil)
	case err != nil:
		h.log.Error("mcp_call_failed", "conversation_id", convID, "err", err)
		writeRPC(w, id, nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "agentik could not follow the turn; read the conversation " + convID})
	default:
		out := t.result()
		out.ResultType = mcp.ResultTypeComplete
		writeRPC(w, id, out, nil)
	}
}

// openTask reads task ref's turn as it stands, as the caller.
func (h *Handler) openTask(ctx context.Context, ref taskRef, id string, elicits bool) (*turnCall, *rpcError) {
	if _, err := h.cfg.Conversations.Get(ctx, ref.Conv); errors.Is(err, agent.ErrNotFound) {
		return nil, noTask(id)
	} else if err != nil {
		h.log.Error("mcp_task_failed", "conversation_id", ref.Conv, "err", err)
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "agentik could not read the task"}
	}
	sub, err := relay.Conversation(ctx, h.cfg.Broker, ref.Conv, ref.Turn-1)
	var re *broker.ResyncError
	if errors.As(err, &re) {
		return nil, &rpcError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("task %s has expired (%s): read the conversation %s", agent.Shorten(id, 120), re.Reason, ref.Conv)}
	} else if err != nil {
		h.log.Error("mcp_task_failed", "conversation_id", ref.Conv, "err", err)
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "agentik could not read the task"}
	}
	defer sub.Close()
	t := &turnCall{h: h, ctx: ctx, convID: ref.Conv, turnSeq: ref.Turn, modern: true, mrtr: elicits, detached: true, snapshot: true}
	if err := t.follow(sub, relay.Follow{}); err != nil {
		return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "agentik could not read the task"}
	}
	if t.firstSeq != ref.Turn || !t.firstUser {
		return nil, noTask(id) // no turn starts there
	}
	return t, nil
}

// task is t's turn as the extension's Task.
func (t *turnCall) task(id string, rt mcp.ResultType) task {
	tk := task{ResultType: rt, TaskID: id, Status: taskWorking, StatusMessage: t.text.String(),
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		PollIntervalMs: taskPollMs}
	switch {
	case t.ended && t.interrupted && t.errMsg == "":
		tk.Status, tk.StatusMessage = taskCancelled, "the turn was interrupted"
		tk.Result = nil
	case t.ended:
		tk.Status, tk.StatusMessage = taskCompleted, ""
		tk.Result = t.result()
		tk.Result.ResultType = mcp.ResultTypeComplete // a 2026-07-28 CallToolResult
	case t.askable():
		tk.Status = taskInputRequired
		tk.InputRequests = t.inputRequests("").InputRequests
	}
	return tk
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// noTask is the extension's error for a task id it does not know (or the
// caller may not see).
func noTask(id string) *rpcError {
	return &rpcError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("no task %q: pass the taskId a tools/call of yours returned", agent.Shorten(id, 120))}
}

// writeRPC answers a request with its result or its error, as JSON, with
// the HTTP status 2026-07-28 gives the error's code (as mcp-go does).
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, e *rpcError) {
	msg := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id}
	status := http.StatusOK
	if e != nil {
		msg["error"] = e
		if e.Code == mcp.INVALID_PARAMS || e.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
			status = http.StatusBadRequest
		}
	} else {
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(msg)
}

// hideTasks is mcp-go's after-initialize hook: a 2025-11-25 session is not
// offered the extension (it is served on 2026-07-28 requests only).
func hideTasks(_ context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
	if res == nil || res.Capabilities.Extensions == nil {
		return
	}
	var rest map[string]any // the server's map is shared: a copy without it
	for k, v := range res.Capabilities.Extensions {
		if k != taskExtension {
			if rest == nil {
				rest = map[string]any{}
			}
			rest[k] = v
		}
	}
	res.Capabilities.Extensions = rest
}
