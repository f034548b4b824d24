package server

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// guard applies the checks every route shares: the Host allow-list (DNS
// rebinding), the Origin check and CSRF protection on state-changing
// requests, API keys, and the body limit.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "host %q is not allowed; add it to AGENTIK_ALLOWED_HOSTS", r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
			if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
				s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "cross-site requests are not allowed"))
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(r, o) {
				s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "origin %q is not allowed; add it to AGENTIK_ALLOWED_ORIGINS", o))
				return
			}
		}
		if !s.requireAuth(w, r) {
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether an Origin header is the request's own host
// or matches an allowed pattern. Browsers send "Origin: null" when the page
// set Referrer-Policy: no-referrer (as every agentik page does), so a null
// origin passes only when the browser vouches, in Sec-Fetch-Site, that the
// request comes from this very origin.
func (s *Server) originAllowed(r *http.Request, origin string) bool {
	if origin == "null" {
		return r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range s.cfg.AllowedOrigins {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return true
		}
	}
	return false
}

// originPatterns are the patterns for websocket.AcceptOptions.
func (s *Server) originPatterns() []string { return s.cfg.AllowedOrigins }
