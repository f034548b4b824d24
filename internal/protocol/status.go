package protocol

import (
	"errors"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
)

// HTTPStatus is the HTTP status of an error code, on every HTTP surface
// (agentik's REST, /v1 and the other protocol packages): the one mapping.
func HTTPStatus(code string) int {
	switch code {
	case agent.CodeBadRequest:
		return http.StatusBadRequest
	case agent.CodeNotFound:
		return http.StatusNotFound
	case agent.CodeBusy, agent.CodeConflict:
		return http.StatusConflict
	case agent.CodeUnauthorized:
		return http.StatusUnauthorized
	case agent.CodeForbidden:
		return http.StatusForbidden
	case agent.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case agent.CodeRateLimited, agent.CodeQuotaExceeded:
		return http.StatusTooManyRequests
	case agent.CodeUnavailable:
		return http.StatusServiceUnavailable
	case agent.CodeModelError, agent.CodeToolError:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// PublicError is err as a client may see it: its *agent.Error (a code
// alone gets the code as its message), or a body over the limit as
// too_large. It is nil for an internal error, whose details belong in the
// server's log only: the caller logs err once and answers InternalError.
func PublicError(err error) *agent.Error {
	var e *agent.Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return agent.Errorf(agent.CodeTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
	case errors.As(err, &e) && e.Code != agent.CodeInternal:
		if e.Message == "" {
			return &agent.Error{Code: e.Code, Message: e.Code}
		}
		return e
	}
	return nil
}

// InternalError is what a client sees of an internal error.
func InternalError() *agent.Error {
	return agent.Errorf(agent.CodeInternal, "internal error; the server log has the details")
}
