package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// JSON-RPC error codes: the standard ones and A2A's.
const (
	codeParseError      = -32700
	codeInvalidRequest  = -32600
	codeMethodNotFound  = -32601
	codeInvalidParams   = -32602
	codeInternal        = -32603
	codeTaskNotFound    = -32001
	codeNotCancelable   = -32002
	codePushUnsupported = -32003
	codeUnsupported     = -32004
	codeContentType     = -32005
	codeNoExtendedCard  = -32007
	// codeLimited is agentik's own (an application-defined code, outside
	// JSON-RPC's reserved range, as A2A has none for it): the caller's
	// budget or rate limit refuses the request, a client's condition
	// (HTTP 429), not the server's failure; data.code says which
	// (quota_exceeded, rate_limited) and the message names the budget
	// and when it resets.
	codeLimited = -31429
)

// rpcError is a JSON-RPC error object; Data carries agentik's code.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

func rpcErr(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// toRPC maps an error to its JSON-RPC error: agentik's own code travels in
// data.code.
func (h *Handler) toRPC(method string, err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	var e *agent.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) {
			return rpcErr(codeInternal, "the request was cancelled")
		}
		h.log.Error("a2a_failed", "method", method, "err", err)
		return &rpcError{Code: codeInternal, Message: "internal error", Data: map[string]any{"code": agent.CodeInternal}}
	}
	code := codeInternal
	switch e.Code {
	case agent.CodeBadRequest, agent.CodeTooLarge:
		code = codeInvalidParams
	case agent.CodeNotFound:
		code = codeTaskNotFound
	case agent.CodeBusy, agent.CodeConflict:
		code = codeUnsupported
	case agent.CodeQuotaExceeded, agent.CodeRateLimited:
		code = codeLimited
	}
	return &rpcError{Code: code, Message: e.Message, Data: map[string]any{"code": e.Code}}
}

// request is one JSON-RPC request.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// response is one JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func reply(w http.ResponseWriter, id json.RawMessage, result any, err *rpcError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, response{JSONRPC: "2.0", ID: id, Result: result, Error: err})
}

// parse reads one JSON-RPC request, or the error to answer.
func parse(b []byte) (request, *rpcError) {
	var req request
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		return req, rpcErr(codeInvalidRequest, "batch requests are not supported: send one JSON-RPC request per POST")
	}
	if !json.Valid(b) {
		return req, rpcErr(codeParseError, "the body is not valid JSON")
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, rpcErr(codeInvalidRequest, "the body is not a JSON-RPC request object: %v", err)
	}
	switch {
	case req.JSONRPC != "2.0":
		return req, rpcErr(codeInvalidRequest, `jsonrpc must be "2.0"`)
	case req.Method == "":
		return req, rpcErr(codeInvalidRequest, "method is required")
	case len(req.ID) > 0 && req.ID[0] != '"' && req.ID[0] != 'n' && (req.ID[0] < '0' || req.ID[0] > '9') && req.ID[0] != '-':
		return req, rpcErr(codeInvalidRequest, "id must be a string, a number or null")
	}
	return req, nil
}

// params decodes a request's params into v.
func params(req request, v any) error {
	if len(req.Params) == 0 || string(req.Params) == "null" {
		return rpcErr(codeInvalidParams, "%s needs params", req.Method)
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return rpcErr(codeInvalidParams, "%s: params are malformed: %v", req.Method, err)
	}
	return nil
}

// methods03 maps A2A 0.3's JSON-RPC method names to 1.0's: a request by
// an old name takes and answers 0.3's shapes (v03.go). 0.3 had no
// tasks/list.
var methods03 = map[string]string{
	"message/send":                        "SendMessage",
	"message/stream":                      "SendStreamingMessage",
	"tasks/get":                           "GetTask",
	"tasks/cancel":                        "CancelTask",
	"tasks/resubscribe":                   "SubscribeToTask",
	"tasks/pushNotificationConfig/set":    pushCreate,
	"tasks/pushNotificationConfig/get":    pushGet,
	"tasks/pushNotificationConfig/list":   pushList,
	"tasks/pushNotificationConfig/delete": pushDelete,
	"agent/getAuthenticatedExtendedCard":  "GetExtendedAgentCard",
}

// handleRPC serves an agent's JSON-RPC endpoint, by A2A 1.0's method
// names and by 0.3's.
func (h *Handler) handleRPC(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r)
	if err != nil {
		reply(w, nil, nil, h.toRPC("", err))
		return
	}
	req, perr := parse(b)
	if perr != nil {
		reply(w, req.ID, nil, perr)
		return
	}
	a, err := h.agentOf(r)
	if err != nil {
		reply(w, req.ID, nil, &rpcError{Code: codeInvalidRequest, Message: err.Error(), Data: map[string]any{"code": agent.CodeNotFound}})
		return
	}
	bind := binding{id: req.ID}
	method := req.Method
	if m, ok := methods03[method]; ok {
		method, bind.v03 = m, true
	}
	ctx := r.Context()
	fail := func(err error) { h.refuse(w, bind, req.Method, err) }
	switch method {
	case "SendMessage", "SendStreamingMessage":
		p, err := h.sendParamsOf(req, bind.v03)
		if err != nil {
			fail(err)
			return
		}
		if method == "SendStreamingMessage" {
			h.sendStreaming(w, r, bind, req.Method, a, p)
			return
		}
		t, err := h.send(ctx, a, p)
		if err != nil {
			fail(err)
			return
		}
		if bind.v03 {
			h.result(w, bind, http.StatusOK, v03TaskOf(t)) // 0.3: the task itself
			return
		}
		h.result(w, bind, http.StatusOK, map[string]any{"task": t})
	case "SubscribeToTask", "GetTask", "CancelTask":
		var p taskParams
		if err := params(req, &p); err != nil {
			fail(err)
			return
		}
		var t Task
		switch method {
		case "SubscribeToTask":
			h.subscribe(w, r, bind, req.Method, p)
			return
		case "GetTask":
			t, err = h.getTask(ctx, p)
		default:
			t, err = h.cancelTask(ctx, p)
		}
		if err != nil {
			fail(err)
			return
		}
		if bind.v03 {
			h.result(w, bind, http.StatusOK, v03TaskOf(t))
			return
		}
		h.result(w, bind, http.StatusOK, t)
	case "ListTasks":
		var p listParams
		if len(req.Params) > 0 {
			if err := params(req, &p); err != nil {
				fail(err)
				return
			}
		}
		res, err := h.listTasks(ctx, p)
		if err != nil {
			fail(err)
			return
		}
		h.result(w, bind, http.StatusOK, res)
	case pushCreate, pushGet, pushList, pushDelete:
		p, err := pushParamsOf(req, bind.v03)
		if err != nil {
			fail(err)
			return
		}
		res, err := h.push(ctx, method, p)
		if err != nil {
			fail(err)
			return
		}
		switch {
		case bind.v03:
			h.result(w, bind, http.StatusOK, v03PushResult(res))
		case res == nil:
			h.result(w, bind, http.StatusOK, map[string]any{}) // deleted
		default:
			h.result(w, bind, http.StatusOK, res)
		}
	case "GetExtendedAgentCard":
		fail(errNoExtendedCard(a))
	default:
		fail(rpcErr(codeMethodNotFound, "no method %q; agentik serves A2A %s (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, CreateTaskPushNotificationConfig, GetTaskPushNotificationConfig, ListTaskPushNotificationConfigs, DeleteTaskPushNotificationConfig, GetExtendedAgentCard) and A2A 0.3's names for them (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/set|get|list|delete)", agent.Shorten(req.Method, 60), ProtocolVersion))
	}
}

func errNoExtendedCard(a Agent) error {
	return rpcErr(codeNoExtendedCard, "agentik has no extended agent card: the card at %s%s%s is the whole card", Prefix, a.Slug, CardPath)
}

// sendParamsOf decodes a send's params, in 0.3's shapes when v03.
func (h *Handler) sendParamsOf(req request, v03 bool) (sendParams, error) {
	var p sendParams
	if !v03 {
		return p, params(req, &p)
	}
	var q v03SendParams
	if err := params(req, &q); err != nil {
		return p, err
	}
	return q.v1()
}

// pushParamsOf decodes a push config method's params, in 0.3's shapes
// when v03.
func pushParamsOf(req request, v03 bool) (pushParams, error) {
	var p pushParams
	if !v03 {
		return p, params(req, &p)
	}
	var q v03PushParams
	if err := params(req, &q); err != nil {
		return p, err
	}
	return q.v1(), nil
}
