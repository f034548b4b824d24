package protocol

import "github.com/agentik/agentik/internal/agent"

// WebSocket ops of projects (docs/PROTOCOL.md, Projects); each is its REST
// route under /agentik, declared once in the server's op table
// (server/op.go).
const (
	OpCreateProject = "create_project" // POST /projects {name, instructions?, agent?, knowledge?, members?}
	OpListProjects  = "list_projects"  // GET /projects
	OpGetProject    = "get_project"    // GET /projects/{project_id}
	OpUpdateProject = "update_project" // PATCH /projects/{project_id}
	OpDeleteProject = "delete_project" // DELETE /projects/{project_id}
)

// ProjectsResult is the result of list_projects.
type ProjectsResult struct {
	Projects []agent.Project `json:"projects"`
}
