package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// paramError is a bad request that names the request field at fault.
type paramError struct {
	param string
	err   *agent.Error
	code  string // OpenAI's code when it has its own, e.g. model_not_found
}

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

func badParam(param, format string, args ...any) error {
	return &paramError{param: param, err: agent.Errorf(agent.CodeBadRequest, format, args...)}
}

// errorBody is OpenAI's error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// errorBody is err in OpenAI's shape, with its HTTP status. Internal
// errors are logged here, once, and their details stay in the log.
func (h *Handler) errorBody(op string, err error) (int, errorBody) {
	var pe *paramError
	errors.As(err, &pe)
	e := protocol.PublicError(err)
	if e == nil {
		h.log.Error("internal_error", "op", op, "err", err)
		e = protocol.InternalError()
	}
	st := protocol.HTTPStatus(e.Code)
	if pe != nil && pe.code == "model_not_found" {
		st = http.StatusNotFound
	}
	d := errorDetail{Message: e.Message, Code: e.Code}
	if pe != nil {
		d.Param = &pe.param
		if pe.code != "" {
			d.Code = pe.code
		}
	}
	d.Type = errorType(st)
	if st == http.StatusUnauthorized {
		d.Code = "invalid_api_key"
	}
	return st, errorBody{d}
}

// errorType is OpenAI's error type for an HTTP status, for error bodies
// and for a failed response's error object alike.
func errorType(st int) string {
	switch {
	case st == http.StatusUnauthorized:
		return "authentication_error"
	case st == http.StatusForbidden:
		return "permission_error"
	case st == http.StatusTooManyRequests:
		return "rate_limit_error"
	case st >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// WriteError answers err in OpenAI's shape with its status. The server's
// middleware calls it for the requests it refuses under /v1.
func (h *Handler) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	id := requestID(w)
	st, body := h.errorBody(r.Method+" "+r.URL.Path+" "+id, err)
	writeJSON(w, st, body)
}

func (h *Handler) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	h.WriteError(w, r, agent.Errorf(agent.CodeNotFound, "no route %s %s; agentik serves GET /v1/models, POST /v1/chat/completions and /v1/responses", r.Method, r.URL.Path))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeBody decodes a JSON body into v.
func decodeBody(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return agent.Errorf(agent.CodeBadRequest, "read body: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return agent.Errorf(agent.CodeBadRequest, "the body must be a JSON object: %s", protocol.JSONProblem(b, err))
	}
	return nil
}
