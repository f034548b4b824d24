package server

import (
	"context"
	"encoding/base64"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// MCP Apps (docs/ARCHITECTURE.md, Browser UI: MCP Apps): the app a tool
// card shows calls tools of its own server through app_call. The op checks
// what the bridge already checked: app is a tool that names an app, and
// name is a tool of the same server; the runner checks the conversation
// (edit access, as for a send) and runs the call under the same approval
// rules as a model's (agent/appcall.go).

// appCallInput is an app_call.
type appCallInput struct {
	conversationRef
	protocol.AppCallRequest
}

func (in *appCallInput) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	if err := need("app", in.App); err != nil {
		return err
	}
	return need("name", in.Name)
}

// opAppCall starts an app's tool call: {call_id, message_id, seq} once its
// turn started; the result comes as the call's tool_result.
var opAppCall = declare(protocol.OpAppCall, 0, func(ctx context.Context, s *Server, in appCallInput) (any, error) {
	if err := s.appMayCall(ctx, in.App, in.Name); err != nil {
		return nil, err
	}
	return s.runner.AppCall(ctx, in.ConversationID, agent.AppCallInput{Name: in.Name, Arguments: in.Arguments})
})

// appMayCall refuses a call of name by the app of tool app unless both are
// tools of one server, app names an MCP App, and name is not for the
// model only (its _meta.ui.visibility without "app").
func (s *Server) appMayCall(ctx context.Context, app, name string) error {
	for _, ts := range s.toolServers(ctx).Servers {
		if _, ok := ts.Apps[app]; !ok {
			continue
		}
		if !slices.Contains(ts.Tools, name) {
			s.log.Warn("app_call_refused", "app", app, "tool", agent.Shorten(name, 80), "server", ts.Name)
			return agent.Errorf(agent.CodeForbidden, "the app of %s may call only tools of server %s; %q is not one", app, ts.Name, agent.Shorten(name, 80))
		}
		if v, ok := ts.Visibility[name]; ok && !slices.Contains(v, "app") {
			s.log.Warn("app_call_refused", "app", app, "tool", name, "server", ts.Name, "visibility", v)
			return agent.Errorf(agent.CodeForbidden, "%s is for the model only (its visibility is %v): apps may not call it", name, v)
		}
		return nil
	}
	return agent.Errorf(agent.CodeNotFound, "tool %q names no MCP App", agent.Shorten(app, 80))
}

// appMIME is the MIME type of an MCP App's HTML.
const appMIME = "text/html;profile=mcp-app"

// handleAppView answers the HTML of an MCP App (GET /agentik/apps/view
// ?server=&uri=, a ui:// resource read through the runner's permission
// check) for the iframe of a tool card. The page's own CSP would bind a
// srcdoc frame, so the app is its own document: sandboxed to scripts by
// its header as by the iframe (an opaque origin, no cookies or storage of
// this one), with the CSP its _meta.ui.csp declares (no network without).
func (s *Server) handleAppView(w http.ResponseWriter, r *http.Request) {
	server, uri := r.URL.Query().Get("server"), r.URL.Query().Get("uri")
	if server == "" || !strings.HasPrefix(uri, "ui://") {
		s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "an app view needs server and a ui:// uri"))
		return
	}
	read, err := s.cfg.Resources.Read(r.Context(), server, uri)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeApp(w, r, read)
}

// writeApp answers an app's HTML read as read, with its CSP; not_found
// when the resource is not an MCP App.
func (s *Server) writeApp(w http.ResponseWriter, r *http.Request, read agent.ResourceRead) {
	server, uri := read.Server, read.URI
	for _, c := range read.Contents {
		if !strings.EqualFold(strings.ReplaceAll(c.MimeType, " ", ""), appMIME) {
			continue
		}
		html := []byte(c.Text)
		if c.Blob != "" {
			var err error
			if html, err = base64.StdEncoding.DecodeString(c.Blob); err != nil {
				s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "app %q of tool server %q is not valid base64", uri, server))
				return
			}
		}
		csp, _ := c.UI["csp"].(map[string]any)
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "sandbox allow-scripts; "+appCSP(csp)+"; frame-ancestors 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		s.log.Info("app_view", "server", server, "uri", agent.Shorten(uri, 200), "csp", h.Get("Content-Security-Policy"))
		_, _ = w.Write(html)
		return
	}
	s.writeError(w, r, agent.Errorf(agent.CodeNotFound, "resource %q of tool server %q is not an MCP App (%s)", uri, server, appMIME))
}

// appOf is the MCP App a tool names, by the tool servers ctx's principal
// sees (list_tools' apps): what a shared view's cards show.
func (s *Server) appOf(ctx context.Context) agent.AppOf {
	servers := s.toolServers(ctx).Servers
	return func(tool string) (string, string, bool) {
		for _, ts := range servers {
			if uri, ok := ts.Apps[tool]; ok {
				return ts.Name, uri, true
			}
		}
		return "", "", false
	}
}

// appOrigin is what an origin of an app's declared CSP must look like: a
// value cannot add a directive.
var appOrigin = regexp.MustCompile(`^(https?|wss?)://[A-Za-z0-9*.-]+(:[0-9]+)?$`)

// appCSP is the policy of an app: the MCP Apps specification's restrictive
// default, widened only by the origins csp declares.
func appCSP(csp map[string]any) string {
	origins := func(key string) []string {
		var out []string
		list, _ := csp[key].([]any)
		for _, v := range list {
			if o, ok := v.(string); ok && appOrigin.MatchString(o) {
				out = append(out, o)
			}
		}
		return out
	}
	or := func(list []string, def string) string {
		if len(list) == 0 {
			return def
		}
		return strings.Join(list, " ")
	}
	res := strings.Join(origins("resourceDomains"), " ")
	with := func(base string) string { return strings.TrimSpace(base + " " + res) }
	return strings.Join([]string{
		"default-src 'none'",
		with("script-src 'self' 'unsafe-inline'"),
		with("style-src 'self' 'unsafe-inline'"),
		with("img-src 'self' data:"),
		with("font-src 'self' data:"),
		with("media-src 'self' data:"),
		"connect-src " + or(origins("connectDomains"), "'none'"),
		"frame-src " + or(origins("frameDomains"), "'none'"),
		"base-uri " + or(origins("baseUriDomains"), "'self'"),
		"object-src 'none'",
		"form-action 'none'",
	}, "; ")
}
