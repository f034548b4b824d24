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

// handleRPC serves an agent's JSON-RPC endpoint.
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
		w.Header().Set("Content-Type", "application/json")
		reply(w, req.ID, nil, &rpcError{Code: codeInvalidRequest, Message: err.Error(), Data: map[string]any{"code": agent.CodeNotFound}})
		return
	}
	ctx := r.Context()
	var result any
	switch req.Method {
	case "SendMessage":
		result, err = h.sendMessage(ctx, a, req)
	case "SendStreamingMessage":
		h.sendStreaming(w, r, a, req)
		return
	case "SubscribeToTask":
		h.subscribe(w, r, req)
		return
	case "GetTask":
		result, err = h.getTask(ctx, req)
	case "CancelTask":
		result, err = h.cancelTask(ctx, req)
	case "ListTasks":
		result, err = h.listTasks(ctx, req)
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		result, err = h.pushMethod(ctx, req)
	case "GetExtendedAgentCard":
		err = rpcErr(codeNoExtendedCard, "agentik has no extended agent card: the card at %s%s%s is the whole card", Prefix, a.Slug, CardPath)
	default:
		err = rpcErr(codeMethodNotFound, "no method %q; agentik serves A2A %s: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask", agent.Shorten(req.Method, 60), ProtocolVersion)
	}
	if err != nil {
		reply(w, req.ID, nil, h.toRPC(req.Method, err))
		return
	}
	reply(w, req.ID, result, nil)
}
