package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The account ops (DESIGN.md §11.9), each the REST route under
// /agentik/me, /agentik/users or /agentik/usage and the WebSocket op of
// its name (op.go): /agentik/me, its keys, the users an admin manages,
// usage. agent.Accounts decides who may do what (a member gets 403 on
// another's).

func (s *Server) accounts() (*agent.Accounts, error) {
	if s.people.accounts == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server's store keeps no accounts")
	}
	return s.people.accounts, nil
}

// accountOp declares an account op: run gets the accounts (unavailable
// when the store keeps none).
func accountOp[T any](name string, status int, run func(ctx context.Context, s *Server, a *agent.Accounts, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		a, err := s.accounts()
		if err != nil {
			return nil, err
		}
		return run(ctx, s, a, in)
	})
}

// userRef names one user: the route's {user_id}.
type userRef struct {
	ID string `json:"user_id"`
}

func (r *userRef) check() error { return need("user_id", r.ID) }

// userChange is a user's new fields, for update_user.
type userChange struct {
	userRef
	agent.UserInput
}

// keyRef names one key of a user: {user_id} (the caller's when absent,
// as on /agentik/me/keys) and {key_id}.
type keyRef struct {
	UserID string `json:"user_id"`
	KeyID  string `json:"key_id"`
	Name   string `json:"name"` // create_key
}

// owner is the user the keys op is about.
func (r keyRef) owner(ctx context.Context) string {
	if r.UserID != "" {
		return r.UserID
	}
	return agent.PrincipalFrom(ctx).UserID
}

// usageQuery is get_usage's fields (GET /agentik/usage's query).
type usageQuery struct {
	User string `json:"user"`
	From string `json:"from"`
	To   string `json:"to"`
}

// usersResult is the result of list_users.
type usersResult struct {
	Users []agent.User `json:"users"`
}

// keysResult is the result of list_keys.
type keysResult struct {
	Keys []agent.Key `json:"keys"`
}

var (
	opMe = accountOp(protocol.OpMe, 0, func(ctx context.Context, s *Server, a *agent.Accounts, _ struct{}) (any, error) {
		return a.Me(ctx)
	})
	opGetUsage = declare(protocol.OpGetUsage, 0, func(ctx context.Context, s *Server, in usageQuery) (any, error) {
		return s.cfg.Budgets.Report(ctx, in.User, in.From, in.To)
	})
	opListUsers = accountOp(protocol.OpListUsers, 0, func(ctx context.Context, s *Server, a *agent.Accounts, _ struct{}) (any, error) {
		us, err := a.Users(ctx)
		if err != nil {
			return nil, err
		}
		return usersResult{Users: nonNil(us)}, nil
	})
	opGetUser = accountOp(protocol.OpGetUser, 0, func(ctx context.Context, s *Server, a *agent.Accounts, in userRef) (any, error) {
		return a.User(ctx, in.ID)
	})
	opCreateUser = accountOp(protocol.OpCreateUser, http.StatusCreated, func(ctx context.Context, s *Server, a *agent.Accounts, in agent.UserInput) (any, error) {
		return a.AddUser(ctx, in)
	})
	opUpdateUser = accountOp(protocol.OpUpdateUser, 0, func(ctx context.Context, s *Server, a *agent.Accounts, in userChange) (any, error) {
		return a.UpdateUser(ctx, in.ID, in.UserInput)
	})
	opDeleteUser = accountOp(protocol.OpDeleteUser, 0, func(ctx context.Context, s *Server, a *agent.Accounts, in userRef) (any, error) {
		return okReply{OK: true}, a.DeleteUser(ctx, in.ID)
	})
	opListKeys = accountOp(protocol.OpListKeys, 0, func(ctx context.Context, s *Server, a *agent.Accounts, in keyRef) (any, error) {
		ks, err := a.Keys(ctx, in.owner(ctx))
		if err != nil {
			return nil, err
		}
		return keysResult{Keys: nonNil(ks)}, nil
	})
	opCreateKey = accountOp(protocol.OpCreateKey, http.StatusCreated, func(ctx context.Context, s *Server, a *agent.Accounts, in keyRef) (any, error) {
		owner := in.owner(ctx)
		if !s.authOn() {
			// The first key turns authentication on: the admin making it for a
			// member would lock themself out.
			if u, err := a.User(ctx, owner); err == nil && u.Role != agent.RoleAdmin {
				return nil, agent.Errorf(agent.CodeBadRequest, "authentication is off (no key exists yet), and the first key turns it on: make an admin's key first (POST /agentik/me/keys, or agentik user key local), then this one")
			}
		}
		return a.CreateKey(ctx, owner, in.Name)
	})
	opRevokeKey = accountOp(protocol.OpRevokeKey, 0, func(ctx context.Context, s *Server, a *agent.Accounts, in keyRef) (any, error) {
		if err := need("key_id", in.KeyID); err != nil {
			return nil, err
		}
		return okReply{OK: true}, a.RevokeKey(ctx, in.owner(ctx), in.KeyID)
	})
)

// personRow is u with their usage now and their keys, for the people
// page.
func (s *Server) personRow(r *http.Request, a *agent.Accounts, u agent.User) web.PersonRow {
	row := web.PersonRow{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, Disabled: u.Disabled, Budget: "none", Local: u.ID == agent.LocalUser,
		OwnBudget: u.Budget, DefaultBudget: s.cfg.Budgets.DefaultBudget().String()}
	const stamp = "2006-01-02 15:04 UTC"
	if ks, err := a.Keys(r.Context(), u.ID); err != nil {
		s.log.Warn("keys_failed", "user_id", u.ID, "err", err)
	} else {
		for _, k := range ks {
			kr := web.KeyRow{ID: k.ID, Name: k.Name, Created: k.CreatedAt.UTC().Format(stamp)}
			if k.LastUsed != nil {
				kr.LastUsed = k.LastUsed.UTC().Format(stamp)
			}
			row.Keys = append(row.Keys, kr)
		}
	}
	rep, err := s.cfg.Budgets.Report(r.Context(), u.ID, "", "")
	if err != nil {
		s.log.Warn("usage_failed", "user_id", u.ID, "err", err)
		return row
	}
	if b := rep.Budget; b != nil {
		row.Budget, row.Used, row.ResetsAt = b.Limit, b.Used, b.ResetsAt.UTC().Format(stamp)
		return row
	}
	for _, d := range rep.Days {
		row.Used += d.PromptTokens + d.CompletionTokens
	}
	return row
}

// handlePeople is the settings page (/settings): one's preferences and
// saved prompts, one's own usage and keys; to an admin, every user's, with
// the forms that manage them. /people, its old address, leads there.
func (s *Server) handlePeople(w http.ResponseWriter, r *http.Request) {
	a, err := s.accounts()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	me, err := a.Me(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := web.PeoplePage{Me: s.personRow(r, a, me), Admin: me.Role == agent.RoleAdmin}
	if p.Credentials, err = s.credentialRows(r.Context()); err != nil { // credential.go
		s.writeError(w, r, err)
		return
	}
	if p.Admin {
		us, err := a.Users(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		for _, u := range us {
			p.Users = append(p.Users, s.personRow(r, a, u))
		}
		if s.cfg.Feedback != nil {
			rep, err := s.cfg.Feedback.Report(r.Context(), 0)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			p.Feedback = rep.Counts
		}
	}
	if err := s.settingsOf(r.Context(), &p); err != nil {
		s.pageError(w, r, err)
		return
	}
	s.renderSection(w, r, "settings", "Settings", web.People(p))
}

// handlePeopleMoved sends /people, the settings page's old address, on.
func (s *Server) handlePeopleMoved(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/settings", http.StatusMovedPermanently)
}

// settingsOf fills the settings' part of the settings page: the reader's
// preferences, the models to choose from, their saved prompts and the
// projects a prompt may be shared with.
func (s *Server) settingsOf(ctx context.Context, p *web.PeoplePage) error {
	if s.cfg.Preferences != nil {
		prefs, err := s.cfg.Preferences.Mine(ctx)
		if err != nil {
			return err
		}
		p.Preferences = prefs
	}
	p.Models, _ = s.runner.Models()
	if s.cfg.Prompts != nil {
		list, err := s.cfg.Prompts.List(ctx)
		if err != nil {
			return err
		}
		p.Prompts = list
	}
	if s.cfg.Projects != nil {
		ps, err := s.cfg.Projects.List(ctx)
		if err != nil {
			return err
		}
		for _, pr := range ps {
			if pr.Role != "" {
				p.Projects = append(p.Projects, web.AgentOption{Slug: pr.ID, Name: pr.Name})
			}
		}
	}
	return nil
}
