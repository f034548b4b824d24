package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
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
