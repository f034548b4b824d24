package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/openai"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// status is the HTTP status of an error code.
func status(code string) int { return protocol.HTTPStatus(code) }

// wireError turns any error into the Error body clients see. Internal
// errors are logged here, once, and their details stay in the log.
func (s *Server) wireError(op string, err error) *agent.Error {
	if e := protocol.PublicError(err); e != nil {
		return e
	}
	s.log.Error("internal_error", "op", op, "err", err)
	return protocol.InternalError()
}

// writeError writes err as an Error body with its status; a browser
// navigation gets the same message as an HTML page; under /v1 it takes
// OpenAI's shape.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if openai.Owns(r.URL.Path) {
		s.openai.WriteError(w, r, err)
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
