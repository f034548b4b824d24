package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/web"
)

// status is the HTTP status of an error code.
func status(code string) int {
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
	case agent.CodeRateLimited:
		return http.StatusTooManyRequests
	case agent.CodeUnavailable:
		return http.StatusServiceUnavailable
	case agent.CodeModelError, agent.CodeToolError:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// wireError turns any error into the Error body clients see. Internal
// errors are logged here, once, and their details stay in the log.
func (s *Server) wireError(op string, err error) *agent.Error {
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
	s.log.Error("internal_error", "op", op, "err", err)
	return agent.Errorf(agent.CodeInternal, "internal error; the server log has the details")
}

// writeError writes err as an Error body with its status; a browser
// navigation gets the same message as an HTML page; under /v1 it takes
// OpenAI's shape.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if isOpenAIPath(r.URL.Path) {
		s.writeOpenAIError(w, r, err)
		return
	}
	e := s.wireError(r.Method+" "+r.URL.Path, err)
	if navigation(r) {
		s.renderError(w, r, status(e.Code), e.Message)
		return
	}
	writeJSON(w, status(e.Code), e)
}

// navigation reports whether r is a browser loading a page (not the API):
// Sec-Fetch-Mode says so, or, from browsers that do not send it, Accept
// asks for HTML.
func navigation(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/agentik/") {
		return false
	}
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" {
		return m == "navigate"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// renderError answers a browser navigation with an HTML error page.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	pageHeaders(w.Header())
	w.WriteHeader(code)
	p := web.ErrorPage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Title: http.StatusText(code), Message: msg}
	if err := web.Error(p).Render(r.Context(), w); err != nil {
		s.log.Debug("page_render", "path", r.URL.Path, "err", err)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
