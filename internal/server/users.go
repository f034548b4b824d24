package server

import (
	"net/http"

	"github.com/agentik/agentik/assets"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/web"
)

// The REST routes of accounts (DESIGN.md §11.9): /agentik/me, its keys,
// and the users an admin manages. agent.Accounts decides who may do what
// (a member gets 403 on another's).

func (s *Server) accounts(w http.ResponseWriter, r *http.Request) (*agent.Accounts, bool) {
	if s.people.accounts == nil {
		s.writeError(w, r, agent.Errorf(agent.CodeUnavailable, "this server's store keeps no accounts"))
		return nil, false
	}
	return s.people.accounts, true
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	u, err := a.Me(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) handleAddUser(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	var in agent.UserInput
	if err := decodeBody(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := a.AddUser(r.Context(), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}

func (s *Server) handleUsers(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	us, err := a.Users(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": us})
}

func (s *Server) handleUser(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	u, err := a.User(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) handleUpdateUser(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	var in agent.UserInput
	if err := decodeBody(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := a.UpdateUser(r.Context(), r.PathValue("id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) handleDeleteUser(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	if err := a.DeleteUser(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// keyOwner is the user a keys route names: {id}, or the caller on /me/keys.
func keyOwner(r *http.Request) string {
	if id := r.PathValue("id"); id != "" {
		return id
	}
	return agent.PrincipalFrom(r.Context()).UserID
}

func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	owner := keyOwner(r)
	if !s.authOn() {
		// The first key turns authentication on: the admin making it for a
		// member would lock themself out.
		if u, err := a.User(r.Context(), owner); err == nil && u.Role != agent.RoleAdmin {
			s.writeError(w, r, agent.Errorf(agent.CodeBadRequest, "authentication is off (no key exists yet), and the first key turns it on: make an admin's key first (POST /agentik/me/keys, or agentik user key local), then this one"))
			return
		}
	}
	k, err := a.CreateKey(r.Context(), owner, in.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, k)
}

func (s *Server) handleKeys(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	ks, err := a.Keys(r.Context(), keyOwner(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": ks})
}

func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	if err := a.RevokeKey(r.Context(), keyOwner(r), r.PathValue("key_id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rep, err := s.runner.Usage(r.Context(), q.Get("user"), q.Get("from"), q.Get("to"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// personRow is u with their usage now, for the people page.
func (s *Server) personRow(r *http.Request, u agent.User) web.PersonRow {
	row := web.PersonRow{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, Disabled: u.Disabled, Budget: "none"}
	rep, err := s.runner.Usage(r.Context(), u.ID, "", "")
	if err != nil {
		s.log.Warn("usage_failed", "user_id", u.ID, "err", err)
		return row
	}
	if b := rep.Budget; b != nil {
		row.Budget, row.Used, row.ResetsAt = b.Limit, b.Used, b.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
		return row
	}
	for _, d := range rep.Days {
		row.Used += d.PromptTokens + d.CompletionTokens
	}
	return row
}

// handlePeople is the page of accounts: one's own usage; to an admin,
// every user's.
func (s *Server) handlePeople(w http.ResponseWriter, r *http.Request) {
	a, ok := s.accounts(w, r)
	if !ok {
		return
	}
	me, err := a.Me(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := web.PeoplePage{StyleURL: assets.URL("app.css"), IconURL: assets.URL("icon.svg"), Me: s.personRow(r, me), Admin: me.Role == agent.RoleAdmin}
	if p.Admin {
		us, err := a.Users(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		for _, u := range us {
			p.Users = append(p.Users, s.personRow(r, u))
		}
	}
	pageHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	if err := web.People(p).Render(r.Context(), w); err != nil {
		s.log.Debug("page_render", "path", r.URL.Path, "err", err)
	}
}
