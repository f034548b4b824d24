package server

import (
	"cmp"
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The ops of projects (docs/PROTOCOL.md, Projects), each the REST route
// under /agentik/projects and the WebSocket op of its name (op.go). The
// projects service and the one permission rule decide who sees what
// (agent/project.go, agent/access.go).

// projects is the server's projects service, or unavailable.
func (s *Server) projects() (*agent.Projects, error) {
	if s.cfg.Projects == nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no projects")
	}
	return s.cfg.Projects, nil
}

// projectOp declares a projects op: run gets the projects service.
func projectOp[T any](name string, status int, run func(ctx context.Context, ps *agent.Projects, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		ps, err := s.projects()
		if err != nil {
			return nil, err
		}
		return run(ctx, ps, in)
	})
}

// projectRef names a project: the route's {project_id}.
type projectRef struct {
	ID string `json:"project_id"`
}

func (r *projectRef) check() error { return need("project_id", r.ID) }

// projectChange is an update_project.
type projectChange struct {
	projectRef
	agent.ProjectInput
}

var (
	opCreateProject = projectOp(protocol.OpCreateProject, http.StatusCreated, func(ctx context.Context, ps *agent.Projects, in agent.ProjectInput) (any, error) {
		return ps.Create(ctx, in)
	})
	opListProjects = projectOp(protocol.OpListProjects, 0, func(ctx context.Context, ps *agent.Projects, _ struct{}) (any, error) {
		list, err := ps.List(ctx)
		if err != nil {
			return nil, err
		}
		return protocol.ProjectsResult{Projects: list}, nil
	})
	opGetProject = projectOp(protocol.OpGetProject, 0, func(ctx context.Context, ps *agent.Projects, in projectRef) (any, error) {
		return ps.Project(ctx, in.ID)
	})
	opUpdateProject = projectOp(protocol.OpUpdateProject, 0, func(ctx context.Context, ps *agent.Projects, in projectChange) (any, error) {
		return ps.Update(ctx, in.ID, in.ProjectInput)
	})
	opDeleteProject = projectOp(protocol.OpDeleteProject, http.StatusNoContent, func(ctx context.Context, ps *agent.Projects, in projectRef) (any, error) {
		return protocol.Empty{}, ps.Delete(ctx, in.ID)
	})
)

// handleProjectsPage is the page of projects (/projects): those the
// caller sees and the form that makes one; with {id} (/projects/{id}),
// one project's settings, members and chats.
func (s *Server) handleProjectsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ps, err := s.projects()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var p web.ProjectsPage
	if id := r.PathValue("id"); id != "" {
		d, err := s.projectDetail(ctx, ps, id)
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		p.Project = &d
		defs, err := s.cfg.Agents.List(ctx)
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		for _, a := range defs {
			p.Agents = append(p.Agents, web.AgentOption{Slug: a.Slug, Name: a.Name})
		}
	} else {
		list, err := ps.List(ctx)
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		for _, pr := range list {
			p.Projects = append(p.Projects, web.ProjectRow{ID: pr.ID, Name: pr.Name, Role: pr.Role, Members: len(pr.Members)})
		}
	}
	s.renderSection(w, r, "chats", "Projects", web.Projects(p))
}

// projectDetail is project id as its page shows it to the caller.
func (s *Server) projectDetail(ctx context.Context, ps *agent.Projects, id string) (web.ProjectDetail, error) {
	pr, err := ps.Project(ctx, id)
	if err != nil {
		return web.ProjectDetail{}, err
	}
	people, err := ps.People(ctx, id)
	if err != nil {
		return web.ProjectDetail{}, err
	}
	d := web.ProjectDetail{ID: pr.ID, Name: pr.Name, Instructions: pr.Instructions, Agent: pr.Agent, Role: pr.Role,
		OwnerName: cmp.Or(people[pr.Owner].Name, pr.Owner), CanEdit: pr.Role == agent.ProjectOwner || agent.PrincipalFrom(ctx).Admin()}
	groups, err := ps.GroupNames(ctx, id)
	if err != nil {
		return web.ProjectDetail{}, err
	}
	for _, m := range pr.Members {
		if m.GroupID != "" {
			d.Members = append(d.Members, web.MemberRow{GroupID: m.GroupID, Name: cmp.Or(groups[m.GroupID], m.GroupID), Role: m.Role})
			continue
		}
		u := people[m.UserID]
		d.Members = append(d.Members, web.MemberRow{UserID: m.UserID, Name: cmp.Or(u.Name, m.UserID), Email: u.Email, Role: m.Role})
	}
	if g := s.people.groups; g != nil && d.CanEdit {
		gs, err := g.List(ctx) // an admin's: every group; a member's: their own
		if err != nil {
			return web.ProjectDetail{}, err
		}
		for _, grp := range gs {
			if _, in := groups[grp.ID]; !in {
				d.Groups = append(d.Groups, web.GroupOption{ID: grp.ID, Name: grp.Name})
			}
		}
	}
	checked := map[string]bool{}
	for _, k := range pr.Knowledge {
		checked[k] = true
	}
	if fs, err := s.files(); err == nil {
		ks, err := fs.Knowledges(ctx)
		if err != nil {
			return web.ProjectDetail{}, err
		}
		for _, k := range ks {
			d.Knowledge = append(d.Knowledge, web.KnowledgeOption{ID: k.ID, Name: k.Name, Checked: checked[k.ID]})
			delete(checked, k.ID)
		}
	}
	for _, k := range pr.Knowledge { // bases of the project the caller cannot list
		if checked[k] {
			d.Knowledge = append(d.Knowledge, web.KnowledgeOption{ID: k, Name: k, Checked: true})
		}
	}
	cs, _, err := s.convs.List(ctx, 0, agent.MaxPageSize)
	if err != nil {
		return web.ProjectDetail{}, err
	}
	for _, c := range cs {
		if c.Project == id {
			d.Chats = append(d.Chats, web.ConversationItems([]agent.Conversation{c}, "")...)
		}
	}
	return d, nil
}

// viewerOf is the name of c's project when the caller is only its viewer
// ("" otherwise): their chat page has no composer.
func (s *Server) viewerOf(ctx context.Context, c agent.Conversation) string {
	if c.Project == "" || s.cfg.Projects == nil {
		return ""
	}
	p, err := s.cfg.Projects.Project(ctx, c.Project)
	if err != nil || p.Role != agent.ProjectViewer {
		return ""
	}
	return p.Name
}
