package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/web"
)

// Signing in to remote MCP servers (DESIGN.md §11.6; internal/tool's
// oauth.go does the OAuth): a server that needs it is auth_required in
// GET /agentik/tools (and list_tools over WS) with the asker's sign-in
// link; the authorization server sends the browser back here. The
// callback is public: the link's sealed state says whose sign-in it is,
// so a headless client's user may open the link in any browser; a browser
// signed in to agentik as someone else is refused.

const oauthCallbackPath = "/agentik/oauth/callback"

// ToolsForPrincipal lists the tool servers as each principal sees them,
// with their own sign-in state (Config.ToolsFor).
type ToolsForPrincipal interface {
	ServersFor(ctx context.Context) []agent.ToolServer
}

// SignInCompleter finishes a remote MCP server's sign-in (Config.SignIn).
type SignInCompleter interface {
	CompleteSignIn(ctx context.Context, state, code string, principal *agent.Principal) (server string, err error)
}

func (s *Server) handleOAuthCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c := s.cfg.SignIn
	if c == nil {
		s.renderNotice(w, r, http.StatusNotFound, "Sign-in failed", "No remote MCP server signs in here: agentik has no tool servers configured.")
		return
	}
	if e := q.Get("error"); e != "" {
		msg := "The authorization server did not sign you in (" + e + ")"
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		s.log.Warn("mcp_oauth_sign_in_failed", "reason", e)
		s.renderNotice(w, r, http.StatusBadRequest, "Sign-in failed", msg+". Nothing was stored.")
		return
	}
	var who *agent.Principal
	if s.authOn() {
		if p, _, ok := s.principal(r); ok {
			who = &p
		}
	}
	name, err := c.CompleteSignIn(r.Context(), q.Get("state"), q.Get("code"), who)
	if err != nil {
		e := s.wireError(r.Method+" "+r.URL.Path, err)
		s.log.Warn("mcp_oauth_sign_in_failed", "reason", e.Message)
		s.renderNotice(w, r, status(e.Code), "Sign-in failed", e.Message)
		return
	}
	s.renderNotice(w, r, http.StatusOK, "Signed in", "You are signed in to the tool server "+strings.TrimSpace(name)+": agentik can use its tools for you now. You may close this tab.")
}

// renderNotice is a page with a title and a message (the error page's look).
func (s *Server) renderNotice(w http.ResponseWriter, r *http.Request, code int, title, msg string) {
	pageHeaders(w.Header())
	w.WriteHeader(code)
	p := web.ErrorPage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Title: title, Message: msg}
	if err := web.Error(p).Render(r.Context(), w); err != nil {
		s.log.Debug("page_render", "path", r.URL.Path, "err", err)
	}
}
