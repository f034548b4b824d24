package server

import (
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/openai"
	"github.com/agentik/agentik/internal/protocol"
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
		if s.cors(w, r) {
			return
		}
		// A Bearer call to the OpenAI facade cannot be forged by another
		// site (a browser sends no Authorization header cross-site without
		// a CORS preflight, which agentik never grants under /v1): no
		// Origin check.
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions && !bearerOpenAI(r) {
			// A front end on an origin listed in AllowedOrigins (a
			// useChat or AG-UI app on its own site) may post cross-site.
			if r.Header.Get("Sec-Fetch-Site") == "cross-site" && !s.originListed(r.Header.Get("Origin")) {
				s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "cross-site requests are not allowed"))
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(r, o) {
				s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "origin %q is not allowed; add it to AGENTIK_ALLOWED_ORIGINS", o))
				return
			}
		}
		if !openCard(r) {
			var (
				ok      bool
				release func()
			)
			if r, release, ok = s.requireAuth(w, r); !ok {
				return
			}
			if r.URL.Path == wsPath {
				hw := &heldWriter{ResponseWriter: w, release: release}
				w, release = hw, hw.done
			}
			defer release()
		}
		r = s.withBase(r)   // password.go
		r = s.withOrigin(r) // audit.go
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = s.deadlineBody(w, http.MaxBytesReader(w, r.Body, s.bodyLimit(r)))
		}
		next.ServeHTTP(w, r)
	})
}

// bodyLimit is the cap of r's body: protocol.MaxBodyBytes, or for an
// import Config.MaxImportBytes (an export of one conversation may be
// bigger than any other request, and must import).
func (s *Server) bodyLimit(r *http.Request) int64 {
	if r.Method == http.MethodPost && r.URL.Path == importPath {
		return s.cfg.MaxImportBytes
	}
	if r.Method == http.MethodPost && (r.URL.Path == filesPath || r.URL.Path == openaiFilesPath) {
		return s.uploadLimit() // file.go
	}
	return protocol.MaxBodyBytes
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
	return strings.EqualFold(u.Host, r.Host) || s.originListed(origin)
}

// originListed reports whether an Origin header matches one of the
// AllowedOrigins patterns (not merely the request's own host).
func (s *Server) originListed(origin string) bool {
	u, err := url.Parse(origin)
	if origin == "" || origin == "null" || err != nil || u.Host == "" {
		return false
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

// deadlineBody bounds reading body by BodyTimeout: the connection's read
// deadline is set now and cleared once the body has been read to its end
// or closed, so a response streamed afterwards is not cut off.
func (s *Server) deadlineBody(w http.ResponseWriter, body io.ReadCloser) io.ReadCloser {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)); err != nil {
		return body // not a net/http connection (a test recorder): nothing to bound
	}
	return &timedBody{ReadCloser: body, rc: rc}
}

// timedBody clears the read deadline when its body is done.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *timedBody) Close() error {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return b.ReadCloser.Close()
}

// cors lets a front end on an allowed origin (AGENTIK_ALLOWED_ORIGINS)
// call the API: it answers preflights, before any key is asked for (a
// preflight carries none), and marks the responses of allowed origins
// readable. It reports whether it answered r.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || !strings.HasPrefix(r.URL.Path, "/agentik/") {
		return false
	}
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	w.Header().Add("Vary", "Origin")
	if origin == "null" || !s.originAllowed(r, origin) {
		if preflight {
			s.writeError(w, r, agent.Errorf(agent.CodeForbidden, "origin %q is not allowed; add it to AGENTIK_ALLOWED_ORIGINS", origin))
		}
		return preflight
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	if !preflight {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// bearerOpenAI reports whether r is an API call to the OpenAI facade that
// carries its key as Authorization: Bearer (checked by requireAuth).
func bearerOpenAI(r *http.Request) bool {
	return openai.Owns(r.URL.Path) && strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ")
}
