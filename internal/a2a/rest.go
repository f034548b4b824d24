package a2a

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// The HTTP+JSON (REST) binding of A2A 1.0, under the same base as the
// JSON-RPC endpoint (/a2a/{slug}): POST /message:send, /message:stream;
// GET /tasks (list), /tasks/{id}; POST /tasks/{id}:cancel; GET or POST
// /tasks/{id}:subscribe; /tasks/{id}/pushNotificationConfigs[/{config}]
// (POST, GET, DELETE); GET /extendedAgentCard. Bodies and answers are
// the JSON-RPC binding's params and results; a stream's events are its
// StreamResponses; errors are google.rpc.Status bodies, {"error": {code,
// status, message, details: [ErrorInfo{reason, domain, metadata}]}}, with
// the HTTP status A2A names for each error.

// restRoutes are the REST binding's routes.
func (h *Handler) restRoutes() map[string]http.Handler {
	base := Prefix + "{slug}"
	task := base + "/tasks/{task}"
	return map[string]http.Handler{
		"POST " + base + "/message:send":                       h.rest(h.restSend),
		"POST " + base + "/message:stream":                     h.rest(h.restSend),
		"GET " + base + "/tasks":                               h.rest(h.restList),
		"GET " + task:                                          h.rest(h.restTask),
		"POST " + task:                                         h.rest(h.restTask),
		"POST " + task + "/pushNotificationConfigs":            h.rest(h.restPush),
		"GET " + task + "/pushNotificationConfigs":             h.rest(h.restPush),
		"GET " + task + "/pushNotificationConfigs/{config}":    h.rest(h.restPush),
		"DELETE " + task + "/pushNotificationConfigs/{config}": h.rest(h.restPush),
		"GET " + base + "/extendedAgentCard":                   h.rest(h.restExtendedCard),
	}
}

// rest serves a REST route of the path's agent (among those the caller
// may use).
func (h *Handler) rest(f func(http.ResponseWriter, *http.Request, Agent)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := h.agentOf(r)
		if err != nil {
			h.restError(w, "", &rpcError{Code: codeInvalidRequest, Message: err.Error(), Data: map[string]any{"code": agent.CodeNotFound}})
			return
		}
		f(w, r, a)
	})
}

var restBind = binding{rest: true}

// decodeBody reads a REST request's JSON body into v.
func decodeBody(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return rpcErr(codeInvalidRequest, "the request needs a JSON body")
	}
	if !json.Valid(b) {
		return rpcErr(codeParseError, "the body is not valid JSON")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return rpcErr(codeInvalidParams, "the body is malformed: %v", err)
	}
	return nil
}

func (h *Handler) restSend(w http.ResponseWriter, r *http.Request, a Agent) {
	method := "SendMessage"
	if strings.HasSuffix(r.URL.Path, ":stream") {
		method = "SendStreamingMessage"
	}
	var p sendParams
	if err := decodeBody(r, &p); err != nil {
		h.restError(w, method, err)
		return
	}
	if method == "SendStreamingMessage" {
		h.sendStreaming(w, r, restBind, method, a, p)
		return
	}
	t, err := h.send(r.Context(), a, p)
	if err != nil {
		h.restError(w, method, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": t})
}

// queryInt reads an optional integer query parameter.
func queryInt(r *http.Request, name string) (*int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, rpcErr(codeInvalidParams, "%s must be an integer, got %q", name, agent.Shorten(s, 40))
	}
	return &n, nil
}

// restTask serves GET /tasks/{id}, POST /tasks/{id}:cancel and GET or
// POST /tasks/{id}:subscribe.
func (h *Handler) restTask(w http.ResponseWriter, r *http.Request, _ Agent) {
	id, action, _ := strings.Cut(r.PathValue("task"), ":")
	hist, err := queryInt(r, "historyLength")
	if err != nil {
		h.restError(w, "GetTask", err)
		return
	}
	p := taskParams{ID: id, HistoryLength: hist}
	var t Task
	switch {
	case action == "subscribe":
		h.subscribe(w, r, restBind, "SubscribeToTask", p)
		return
	case action == "" && r.Method == http.MethodGet:
		t, err = h.getTask(r.Context(), p)
	case action == "cancel" && r.Method == http.MethodPost:
		t, err = h.cancelTask(r.Context(), p)
	default:
		h.restError(w, "", rpcErr(codeMethodNotFound, "no REST route %s %s: a task is read with GET …/tasks/{id}, cancelled with POST …/tasks/{id}:cancel, followed with POST …/tasks/{id}:subscribe", r.Method, agent.Shorten(r.URL.Path, 200)))
		return
	}
	if err != nil {
		h.restError(w, "", err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (h *Handler) restList(w http.ResponseWriter, r *http.Request, _ Agent) {
	q := r.URL.Query()
	p := listParams{ContextID: q.Get("contextId"), Status: q.Get("status"), PageToken: q.Get("pageToken")}
	var err error
	if p.PageSize, err = queryInt(r, "pageSize"); err == nil {
		p.HistoryLength, err = queryInt(r, "historyLength")
	}
	if s := q.Get("includeArtifacts"); err == nil && s != "" {
		if p.IncludeArtifacts, err = strconv.ParseBool(s); err != nil {
			err = rpcErr(codeInvalidParams, "includeArtifacts must be true or false, got %q", agent.Shorten(s, 40))
		}
	}
	if err != nil {
		h.restError(w, "ListTasks", err)
		return
	}
	res, err := h.listTasks(r.Context(), p)
	if err != nil {
		h.restError(w, "ListTasks", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// restPush serves the push config routes.
func (h *Handler) restPush(w http.ResponseWriter, r *http.Request, _ Agent) {
	p := pushParams{TaskID: r.PathValue("task"), ID: r.PathValue("config")}
	method := pushList
	switch {
	case r.Method == http.MethodPost:
		method = pushCreate
		if h.cfg.KV == nil {
			h.restError(w, method, errNoPush())
			return
		}
		var body pushParams
		if err := decodeBody(r, &body); err != nil {
			h.restError(w, method, err)
			return
		}
		if body.TaskID != "" && body.TaskID != p.TaskID {
			h.restError(w, method, rpcErr(codeInvalidParams, "the body's taskId %q is not the path's task %q", agent.Shorten(body.TaskID, 80), agent.Shorten(p.TaskID, 80)))
			return
		}
		p.PushConfig, p.ID = body.PushConfig, body.ID
	case r.Method == http.MethodDelete:
		method = pushDelete
	case p.ID != "":
		method = pushGet
	}
	res, err := h.push(r.Context(), method, p)
	if err != nil {
		h.restError(w, method, err)
		return
	}
	if res == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *Handler) restExtendedCard(w http.ResponseWriter, _ *http.Request, a Agent) {
	h.restError(w, "GetExtendedAgentCard", errNoExtendedCard(a))
}

// restError answers err as a google.rpc.Status body.
func (h *Handler) restError(w http.ResponseWriter, method string, err error) {
	status, body := restBody(h.toRPC(method, err))
	writeJSON(w, status, body)
}

// restStatus is how an error is spelled in the REST binding.
type restStatus struct {
	http           int
	status, reason string
}

// restStatuses maps the JSON-RPC error codes to A2A's REST errors.
var restStatuses = map[int]restStatus{
	codeParseError:      {http.StatusBadRequest, "INVALID_ARGUMENT", "PARSE_ERROR"},
	codeInvalidRequest:  {http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_REQUEST"},
	codeMethodNotFound:  {http.StatusNotFound, "UNIMPLEMENTED", "METHOD_NOT_FOUND"},
	codeInvalidParams:   {http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS"},
	codeInternal:        {http.StatusInternalServerError, "INTERNAL", "INTERNAL_ERROR"},
	codeTaskNotFound:    {http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"},
	codeNotCancelable:   {http.StatusBadRequest, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"},
	codePushUnsupported: {http.StatusBadRequest, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	codeUnsupported:     {http.StatusBadRequest, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"},
	codeContentType:     {http.StatusBadRequest, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
	codeNoExtendedCard:  {http.StatusBadRequest, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	codeLimited:         {http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"},
}

// agentStatuses are agentik's errors that JSON-RPC can only call
// internal, with their own HTTP status.
var agentStatuses = map[string]restStatus{
	agent.CodeNotFound:      {http.StatusNotFound, "NOT_FOUND", "INVALID_REQUEST"}, // an agent of the path
	agent.CodeUnauthorized:  {http.StatusUnauthorized, "UNAUTHENTICATED", "UNAUTHENTICATED"},
	agent.CodeForbidden:     {http.StatusForbidden, "PERMISSION_DENIED", "UNAUTHORIZED"},
	agent.CodeRateLimited:   {http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "RATE_LIMITED"},
	agent.CodeQuotaExceeded: {http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"},
	agent.CodeUnavailable:   {http.StatusServiceUnavailable, "UNAVAILABLE", "INTERNAL_ERROR"},
}

// restBody is e's HTTP status and google.rpc.Status body; agentik's own
// code is in the ErrorInfo's metadata.
func restBody(e *rpcError) (int, map[string]any) {
	st, ok := restStatuses[e.Code]
	if !ok {
		st = restStatuses[codeInternal]
	}
	meta := map[string]string{}
	if code, ok := e.Data["code"].(string); ok {
		meta["code"] = code
		if s, ok := agentStatuses[code]; ok && (e.Code == codeInternal || e.Code == codeInvalidRequest || e.Code == codeLimited) {
			st = s
		}
	}
	info := map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": st.reason, "domain": "a2a-protocol.org"}
	if len(meta) > 0 {
		info["metadata"] = meta
	}
	return st.http, map[string]any{"error": map[string]any{
		"code": st.http, "status": st.status, "message": e.Message, "details": []any{info},
	}}
}
