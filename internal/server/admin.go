package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The admin panel (issue 51): /admin and its REST surface under
// /agentik/admin. agent.Site checks that the caller is an admin (a member
// gets forbidden, as /agentik/users does) and audits every change; a bad
// change (an invalid URL, a malformed mcp.json entry) is bad_request and
// changes nothing.

// site is the admin panel's service, or unavailable.
func (s *Server) site() (*agent.Site, error) {
	if s.cfg.Site == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server has no admin panel")
	}
	return s.cfg.Site, nil
}

// siteChange runs one change of the admin panel.
func siteChange(ctx context.Context, s *Server, c agent.SiteChange) (any, error) {
	site, err := s.site()
	if err != nil {
		return nil, err
	}
	return site.Change(ctx, c)
}

// adminName is the {name} of a provider's or MCP server's route.
type adminName struct {
	Name string `json:"name"`
}

// adminValue is a setting's new value.
type adminValue struct {
	Value *string `json:"value"`
}

// adminMCPInput is an MCP server to add or change.
type adminMCPInput struct {
	Name    string          `json:"name"`
	Entry   json.RawMessage `json:"entry"`
	Enabled *bool           `json:"enabled"`
}

// adminUser is the {user_id} of the user view.
type adminUser struct {
	UserID string `json:"user_id"`
}

var (
	opAdminSettings = declare(protocol.OpAdminSettings, 0, func(ctx context.Context, s *Server, _ struct{}) (any, error) {
		site, err := s.site()
		if err != nil {
			return nil, err
		}
		return site.View(ctx)
	})
	opAdminPutProvider = declare(protocol.OpAdminPutProvider, 0, func(ctx context.Context, s *Server, in agent.SiteProvider) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SitePutProvider, Provider: &in})
	})
	opAdminDeleteProvider = declare(protocol.OpAdminDeleteProvider, 0, func(ctx context.Context, s *Server, in adminName) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SiteDeleteProvider, Name: in.Name})
	})
	opAdminTestProvider = declare(protocol.OpAdminTestProvider, 0, func(ctx context.Context, s *Server, in agent.SiteProvider) (any, error) {
		site, err := s.site()
		if err != nil {
			return nil, err
		}
		models, err := site.Test(ctx, in)
		if err != nil {
			return nil, err
		}
		return map[string]any{"models": models}, nil
	})
	opAdminDefaultModel = declare(protocol.OpAdminDefaultModel, 0, func(ctx context.Context, s *Server, in adminValue) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SiteDefaultModel, Value: in.Value})
	})
	opAdminPutMCPServer = declare(protocol.OpAdminPutMCPServer, 0, func(ctx context.Context, s *Server, in adminMCPInput) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SitePutMCPServer, Name: in.Name, Entry: in.Entry, Enabled: in.Enabled})
	})
	opAdminDeleteMCPServer = declare(protocol.OpAdminDeleteMCPServer, 0, func(ctx context.Context, s *Server, in adminName) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SiteDeleteMCP, Name: in.Name})
	})
	opAdminRestartMCP = declare(protocol.OpAdminRestartMCP, 0, func(ctx context.Context, s *Server, in adminName) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SiteRestartMCP, Name: in.Name})
	})
	opAdminSystemPrompt = declare(protocol.OpAdminSystemPrompt, 0, func(ctx context.Context, s *Server, in adminValue) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SiteSystemPrompt, Value: in.Value})
	})
	opAdminDefaultBudget = declare(protocol.OpAdminDefaultBudget, 0, func(ctx context.Context, s *Server, in adminValue) (any, error) {
		return siteChange(ctx, s, agent.SiteChange{Action: agent.SiteDefaultBudget, Value: in.Value})
	})
	// opAdminConversations is the admin panel's user view: one user's
	// conversations, with their owner (the admin's own sidebar lists
	// hers only).
	opAdminConversations = declare(protocol.OpAdminConversations, 0, func(ctx context.Context, s *Server, in adminUser) (any, error) {
		if !agent.PrincipalFrom(ctx).Admin() {
			return nil, agent.Errorf(agent.CodeForbidden, "only an admin may list another user's conversations")
		}
		if err := need("user_id", in.UserID); err != nil {
			return nil, err
		}
		cs, total, err := s.convs.List(agent.OwnedBy(ctx, in.UserID), 0, agent.MaxPageSize)
		if err != nil {
			return nil, err
		}
		return protocol.ListResult{Conversations: cs, Total: total}, nil
	})
)

// handleAdminPage is the admin panel (/admin): an admin's only; anyone
// else gets the not-found page, as for a route they cannot see.
func (s *Server) handleAdminPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !agent.PrincipalFrom(ctx).Admin() || s.cfg.Site == nil {
		s.pageError(w, r, agent.Errorf(agent.CodeNotFound, "no page %s", r.URL.Path))
		return
	}
	p, err := s.page(ctx, "")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	p.Title = "Admin · agentik"
	p.Nav = "admin"
	p.AdminPanel = &web.AdminView{}
	s.renderPage(w, r, http.StatusOK, p)
}

// checkActAs is the send op's rule for acting as admin (agent/actas.go):
// only an admin may ask for it, and an admin writes in another user's
// conversation only when she asks for it, so that the UI's read-only view
// cannot be written through by mistake. The conversation is looked up
// through the permission check first: a member's hidden id stays
// not_found.
func (s *Server) checkActAs(ctx context.Context, id string, actAs bool) error {
	if actAs && !agent.PrincipalFrom(ctx).Admin() {
		return agent.Errorf(agent.CodeForbidden, "act_as_admin is for admins; send without it in your own conversations")
	}
	if !agent.PrincipalFrom(ctx).Admin() || id == "" {
		return nil
	}
	c, err := s.convs.Get(ctx, id)
	if err != nil {
		return err
	}
	if agent.ActsAsAdmin(ctx, c) && !actAs {
		return agent.Errorf(agent.CodeForbidden, "conversation %s belongs to another user: an admin writes in it only with act_as_admin: true, which marks the message as hers and bills her budget", agent.Shorten(id, 40))
	}
	return nil
}
