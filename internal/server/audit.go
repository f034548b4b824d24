package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// The audit log on the HTTP surface (DESIGN.md §12.3, §12.5): every
// request carries its origin (client address, surface) for the entries
// the centre records; sign-ins are recorded where the session cookie is
// set (setUserSession), failed ones where the form is refused; an admin
// reads the log (GET /agentik/audit, op list_audit) and exports it as
// JSON Lines (GET /agentik/audit/export), which `agentik audit verify`
// checks offline.

// audit is the runner's audit log; nil records nothing.
func (s *Server) audit() *agent.Audit {
	if s.runner == nil {
		return nil
	}
	return s.runner.Audit()
}

// withOrigin puts r's client address and surface in its context.
func (s *Server) withOrigin(r *http.Request) *http.Request {
	return r.WithContext(agent.WithOrigin(r.Context(), agent.Origin{Address: s.clientAddr(r).String(), Protocol: surface(r.URL.Path)}))
}

// surface names the protocol or part of agentik a path belongs to.
func surface(p string) string {
	switch {
	case p == wsPath:
		return "ws"
	case strings.HasPrefix(p, "/agentik/ai-sdk/"):
		return "ai-sdk"
	case strings.HasPrefix(p, "/agentik/ag-ui"):
		return "ag-ui"
	case strings.HasPrefix(p, "/agentik/"):
		return "rest"
	case strings.HasPrefix(p, "/v1/"):
		return "openai"
	case strings.HasPrefix(p, "/a2a/") || strings.HasPrefix(p, "/.well-known/"):
		return "a2a"
	case p == "/mcp" || strings.HasPrefix(p, "/mcp/"):
		return "mcp"
	case strings.HasPrefix(p, "/auth/oidc/"):
		return "oidc"
	case strings.HasPrefix(p, "/scim/"):
		return "scim"
	}
	return "web"
}

// signInMethod names how the sign-in r sets a session for was made.
func signInMethod(r *http.Request) string {
	switch p := r.URL.Path; {
	case p == "/login" && r.PostForm.Get("email") != "":
		return "password"
	case p == "/login":
		return "key"
	case strings.HasPrefix(p, "/auth/oidc/"):
		return "oidc"
	case strings.HasPrefix(p, "/scim/"):
		return "scim"
	case strings.HasSuffix(p, "/signup"):
		return "sign_up"
	case strings.HasSuffix(p, "/reset"):
		return "reset"
	}
	return "session"
}

// auditQuery is list_audit's fields (GET /agentik/audit's query): from
// and to are RFC 3339 times; after is the next page's cursor.
type auditQuery struct {
	Actor  string  `json:"actor"`
	Action string  `json:"action"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	After  integer `json:"after"`
	Limit  integer `json:"limit"`
}

func (q auditQuery) query() (agent.AuditQuery, error) {
	out := agent.AuditQuery{Actor: q.Actor, Action: q.Action}
	for _, f := range []struct {
		name, v string
		t       *time.Time
	}{{"from", q.From, &out.From}, {"to", q.To, &out.To}} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.v)
		if err != nil {
			return out, agent.Errorf(agent.CodeBadRequest, "%s must be an RFC 3339 time (2026-01-31T09:00:00Z), got %q", f.name, agent.Shorten(f.v, 60))
		}
		*f.t = t
	}
	if out.After = q.After.N; out.After < 0 {
		return out, agent.Errorf(agent.CodeBadRequest, "after must be 0 or more (the next of the page before), got %d", out.After)
	}
	if l := q.Limit.or(100); l < 1 || l > agent.MaxAuditPage {
		return out, agent.Errorf(agent.CodeBadRequest, "limit must be between 1 and %d, got %d", agent.MaxAuditPage, l)
	} else {
		out.Limit = int(l)
	}
	return out, nil
}

// auditPage is list_audit's result.
type auditPage struct {
	Entries []agent.AuditEntry `json:"entries"`
	Next    int64              `json:"next,omitempty"` // ask again with after=next
}

var opListAudit = declare(protocol.OpListAudit, 0, func(ctx context.Context, s *Server, in auditQuery) (any, error) {
	q, err := in.query()
	if err != nil {
		return nil, err
	}
	es, next, err := s.audit().Entries(ctx, q)
	if err != nil {
		return nil, err
	}
	return auditPage{Entries: nonNil(es), Next: next}, nil
})

// handleAuditExport is GET /agentik/audit/export: the whole log as JSON
// Lines, for `agentik audit verify`.
func (s *Server) handleAuditExport(w http.ResponseWriter, r *http.Request) {
	if err := s.audit().MayRead(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="agentik-audit.jsonl"`)
	if err := s.audit().Export(r.Context(), w); err != nil {
		s.log.Error("audit_export_failed", "err", err) // the body ends early: verify says where
	}
}
