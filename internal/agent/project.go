package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Projects (DESIGN.md §12.2) group conversations: a name, instructions
// added to the system prompt after the agent's, a default agent for new
// chats, knowledge bases their turns search, and members who see its
// chats (viewer) or also send in them (editor). The project's owner is
// its implicit editor and its admin: only they change it, and only a
// conversation's owner moves it in or out. Who sees what is the one rule
// of access.go, grown by the project rule there.

// Project roles. RoleOwner is the project's owner, who is not a member row.
const (
	ProjectViewer = "viewer"
	ProjectEditor = "editor"
	ProjectOwner  = "owner"
)

// Limits of projects.
const (
	maxProjectName         = 200
	maxProjectInstructions = MaxSystemPromptBytes
	maxProjectMembers      = 500
	maxProjectKnowledge    = 32
)

// Project is a project as its members see it.
type Project struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Instructions string          `json:"instructions"`
	Agent        string          `json:"agent,omitempty"` // the default agent of its new chats
	Knowledge    []string        `json:"knowledge"`
	Members      []ProjectMember `json:"members"`
	Owner        string          `json:"owner"`
	// Role is the caller's: owner, editor or viewer ("" for an admin who
	// is none of them); filled by the reads of the service.
	Role      string    `json:"role,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ProjectMember is a member of a project: a user (UserID) or a group
// (GroupID, DESIGN.md §12.3: its users then have its role) with a role.
type ProjectMember struct {
	UserID  string `json:"user_id,omitempty"`
	GroupID string `json:"group_id,omitempty"`
	Role    string `json:"role"`
	// Email names a user in an input in place of UserID (the project
	// page adds a colleague by email); it is resolved to their id and
	// not kept.
	Email string `json:"email,omitempty"`
}

// ProjectInput creates or changes a project: nil fields stay as they are.
type ProjectInput struct {
	Name         *string          `json:"name"`
	Instructions *string          `json:"instructions"`
	Agent        *string          `json:"agent"`
	Knowledge    *[]string        `json:"knowledge"`
	Members      *[]ProjectMember `json:"members"`
}

// ProjectStore keeps projects and their members.
type ProjectStore interface {
	// PutProject stores p (new, or the new state of one) with its
	// members and knowledge.
	PutProject(ctx context.Context, p Project) error
	// Project returns a project with its members and knowledge, or
	// not_found.
	Project(ctx context.Context, id string) (Project, error)
	// Projects lists every project with its members and knowledge.
	Projects(ctx context.Context) ([]Project, error)
	// DeleteProject deletes a project's rows (its conversations are moved
	// out first, through the event log: Projects.Delete).
	DeleteProject(ctx context.Context, id string) error
	// ProjectConversations lists the ids of the conversations in a project.
	ProjectConversations(ctx context.Context, id string) ([]string, error)
}

// RoleIn is the role user, a member of groups, has in p: owner, editor,
// viewer, or "" when none. The one place that says what a member row
// grants: a user's row its role to the user, a group's row its role to
// the group's users; the highest role wins.
func RoleIn(p Project, user string, groups []string) string {
	if user == "" {
		return ""
	}
	if p.Owner == user {
		return ProjectOwner
	}
	role := ""
	for _, m := range p.Members {
		if (m.UserID == user || m.GroupID != "" && slices.Contains(groups, m.GroupID)) && rank(m.Role) > rank(role) {
			role = m.Role
		}
	}
	return role
}

// rank orders roles: who may more ranks higher.
func rank(role string) int {
	switch role {
	case ProjectViewer:
		return 1
	case ProjectEditor:
		return 2
	case ProjectOwner:
		return 3
	}
	return 0
}

// ProjectIndex is what the centre knows of projects in memory: each
// project's owner and members, the members of every group (a group's row
// in a project grants its role to them), and the project of every
// conversation in one. The conversations' projects come from the committed events that
// set them (Committed), in commit order, so a change is never undone by
// a stale one; the projects from the projects service. The rule of access.go reads it for every live event a member's
// stream is offered (package broker asks it, never the database), and the
// lists, search and replays take from it the projects a user reaches. The
// projects service keeps it (loaded at start, changed with every change
// it makes); its methods are safe for concurrent use.
type ProjectIndex struct {
	mu       sync.RWMutex
	projects map[string]Project
	convs    map[string]string   // conversation → project
	members  map[string][]string // group → its users
	groups   map[string][]string // user → their groups (the inverse of members)
}

// NewProjectIndex makes an empty index.
func NewProjectIndex() *ProjectIndex {
	return &ProjectIndex{projects: map[string]Project{}, convs: map[string]string{}, members: map[string][]string{}, groups: map[string][]string{}}
}

// SetGroup notes that group id has exactly users as members (the groups
// service tells it after every change it commits, so that a user added
// to a group sees its projects' chats at once, and one removed stops
// getting their events at once).
func (x *ProjectIndex) SetGroup(id string, users []string) {
	if x == nil || id == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setGroupLocked(id, users)
}

func (x *ProjectIndex) setGroupLocked(id string, users []string) {
	old := x.members[id]
	for _, u := range old {
		if !slices.Contains(users, u) {
			x.groups[u] = slices.DeleteFunc(slices.Clone(x.groups[u]), func(g string) bool { return g == id })
			if len(x.groups[u]) == 0 {
				delete(x.groups, u)
			}
		}
	}
	for _, u := range users {
		if !slices.Contains(x.groups[u], id) {
			x.groups[u] = append(slices.Clone(x.groups[u]), id)
		}
	}
	if len(users) == 0 {
		delete(x.members, id)
	} else {
		x.members[id] = slices.Clone(users)
	}
}

// DropGroup forgets group id: its rows in projects grant nothing more
// (the store deletes them with the group).
func (x *ProjectIndex) DropGroup(id string) {
	if x == nil || id == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setGroupLocked(id, nil)
	for pid, p := range x.projects {
		if slices.ContainsFunc(p.Members, func(m ProjectMember) bool { return m.GroupID == id }) {
			p.Members = slices.DeleteFunc(slices.Clone(p.Members), func(m ProjectMember) bool { return m.GroupID == id })
			x.projects[pid] = p
		}
	}
}

// loadGroups replaces every group's members with gs's.
func (x *ProjectIndex) loadGroups(gs []Group) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.members, x.groups = map[string][]string{}, map[string][]string{}
	for _, g := range gs {
		x.setGroupLocked(g.ID, g.Members)
	}
}

// GroupsOf is the groups user is in, as the index has them.
func (x *ProjectIndex) GroupsOf(user string) []string {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Clone(x.groups[user])
}

// RoleOf is the role user has in p, with the groups the index knows.
func (x *ProjectIndex) RoleOf(p Project, user string) string {
	if x == nil {
		return RoleIn(p, user, nil)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return RoleIn(p, user, x.groups[user])
}

// KnowledgeOwners lists the owners of the projects user is a member of
// (any role) that have knowledge base kid: the project rule of knowledge
// (agent/knowledge.go) lets a project's members read its bases that its
// owner may read.
func (x *ProjectIndex) KnowledgeOwners(user, kid string) []string {
	if x == nil || user == "" {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []string
	for _, p := range x.projects {
		if slices.Contains(p.Knowledge, kid) && RoleIn(p, user, x.groups[user]) != "" && !slices.Contains(out, p.Owner) {
			out = append(out, p.Owner)
		}
	}
	return out
}

func (x *ProjectIndex) putProject(p Project) {
	p.Role = ""
	x.mu.Lock()
	x.projects[p.ID] = p
	x.mu.Unlock()
}

func (x *ProjectIndex) deleteProject(id string) {
	x.mu.Lock()
	delete(x.projects, id)
	for c, p := range x.convs {
		if p == id {
			delete(x.convs, c)
		}
	}
	x.mu.Unlock()
}

// setConversation notes conversation id's project ("" none).
func (x *ProjectIndex) setConversation(id, project string) {
	x.mu.Lock()
	if project == "" {
		delete(x.convs, id)
	} else {
		x.convs[id] = project
	}
	x.mu.Unlock()
}

// Committed learns the project of each conversation a committed batch
// creates, moves or deletes, from the events themselves (the log is where
// a conversation's project lives). The app calls it with every batch the
// store publishes, before the broker fans it out, so a member's stream
// gets the very event that puts a chat in their project, and an instance
// on PostgreSQL learns another's moves with their events. Only agent
// events that name a project are decoded.
func (x *ProjectIndex) Committed(evs []Encoded) {
	if x == nil {
		return
	}
	for _, e := range evs {
		if e.Kind != KindAgent || e.ConversationID == "" {
			continue
		}
		switch e.Type {
		case AgentDeleted:
			x.setConversation(e.ConversationID, "")
		case AgentCreated, AgentUpdated:
			if !bytes.Contains(e.JSON, []byte(`"project"`)) {
				continue
			}
			ev, err := e.Decode()
			if err != nil || ev.Agent == nil || ev.Agent.Project == nil {
				continue
			}
			x.setConversation(e.ConversationID, *ev.Agent.Project)
		}
	}
}

// project is project id as the index has it.
func (x *ProjectIndex) project(id string) (Project, bool) {
	if x == nil || id == "" {
		return Project{}, false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	p, ok := x.projects[id]
	return p, ok
}

// Reached lists the projects user sees the conversations of (sorted).
func (x *ProjectIndex) Reached(user string) []string {
	if x == nil || user == "" {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []string
	for id, p := range x.projects {
		if RoleIn(p, user, x.groups[user]) != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Sees reports whether user sees conversation id through a project (the
// project rule; their own conversations are the owner rule's).
func (x *ProjectIndex) Sees(user, conversationID string) bool {
	if x == nil || user == "" || conversationID == "" {
		return false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	pid, ok := x.convs[conversationID]
	if !ok {
		return false
	}
	return RoleIn(x.projects[pid], user, x.groups[user]) != ""
}

// Members lists the users who see conversation id through its project
// (its project's owner, its user members and its groups' users); nil
// when it is in none.
func (x *ProjectIndex) Members(conversationID string) []string {
	if x == nil || conversationID == "" {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	pid, ok := x.convs[conversationID]
	if !ok {
		return nil
	}
	p := x.projects[pid]
	out := []string{p.Owner}
	for _, m := range p.Members {
		if m.UserID != "" && !slices.Contains(out, m.UserID) {
			out = append(out, m.UserID)
		}
		for _, u := range x.members[m.GroupID] {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// ProjectsConfig configures the projects service.
type ProjectsConfig struct {
	Store  ProjectStore
	Runner *Runner // the conversations it moves and creates
	Index  *ProjectIndex
	// Groups lists the groups whose rows in projects grant their role to
	// their users (loaded into the index); nil: no groups.
	Groups GroupLister
	Now    Clock
}

// GroupLister lists every group with its members (GroupStore has it).
type GroupLister interface {
	Groups(ctx context.Context) ([]Group, error)
	Group(ctx context.Context, id string) (Group, error)
}

// Projects is the projects service.
type Projects struct {
	cfg ProjectsConfig
	now Clock
}

// NewProjects makes the projects service and loads the index from the
// store: every project and the project of every conversation in one.
func NewProjects(ctx context.Context, cfg ProjectsConfig) (*Projects, error) {
	if cfg.Store == nil || cfg.Runner == nil || cfg.Index == nil {
		return nil, errors.New("projects: a ProjectStore, the Runner and a ProjectIndex are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ps := &Projects{cfg: cfg, now: cfg.Now}
	if err := ps.loadGroups(ctx); err != nil {
		return nil, fmt.Errorf("projects: %w", err)
	}
	list, err := cfg.Store.Projects(ctx)
	if err != nil {
		return nil, fmt.Errorf("projects: %w", err)
	}
	for _, p := range list {
		cfg.Index.putProject(p)
		ids, err := cfg.Store.ProjectConversations(ctx, p.ID)
		if err != nil {
			return nil, fmt.Errorf("projects: %w", err)
		}
		for _, c := range ids {
			cfg.Index.setConversation(c, p.ID)
		}
	}
	return ps, nil
}

// loadGroups reads every group's members into the index.
func (ps *Projects) loadGroups(ctx context.Context) error {
	if ps.cfg.Groups == nil {
		return nil
	}
	gs, err := ps.cfg.Groups.Groups(ctx)
	if err != nil {
		return err
	}
	ps.cfg.Index.loadGroups(gs)
	return nil
}

// Reload reads project id again into the index (its members, or its
// deletion), or every project and group when id is "": another instance
// changed it (on PostgreSQL the store tells, store.OnProject; a group's
// change is told as every project's). The conversations' projects come
// with their events (ProjectIndex.Committed).
func (ps *Projects) Reload(ctx context.Context, id string) error {
	x := ps.cfg.Index
	if id != "" {
		p, err := ps.cfg.Store.Project(ctx, id)
		if errors.Is(err, ErrNotFound) {
			x.deleteProject(id)
			return nil
		}
		if err != nil {
			return fmt.Errorf("projects: reload %s: %w", id, err)
		}
		x.putProject(p)
		return nil
	}
	if err := ps.loadGroups(ctx); err != nil {
		return fmt.Errorf("projects: reload groups: %w", err)
	}
	list, err := ps.cfg.Store.Projects(ctx)
	if err != nil {
		return fmt.Errorf("projects: reload: %w", err)
	}
	keep := map[string]bool{}
	for _, p := range list {
		keep[p.ID] = true
		x.putProject(p)
	}
	x.mu.RLock()
	var gone []string
	for pid := range x.projects {
		if !keep[pid] {
			gone = append(gone, pid)
		}
	}
	x.mu.RUnlock()
	for _, pid := range gone {
		x.deleteProject(pid)
	}
	return nil
}

// errNoProject is a project the caller may not see: as an unknown id.
func errNoProject(id string) error {
	return Errorf(CodeNotFound, "project %q not found", Shorten(id, 80))
}

// projectFor is project id with the caller's role, or not_found when
// they have none (an admin sees every project).
func (ps *Projects) projectFor(ctx context.Context, id string) (Project, error) {
	p, err := ps.cfg.Store.Project(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Project{}, errNoProject(id)
	}
	if err != nil {
		return Project{}, err
	}
	pr := PrincipalFrom(ctx)
	p.Role = ps.cfg.Index.RoleOf(p, pr.UserID)
	if p.Role == "" && !pr.Admin() {
		return Project{}, errNoProject(id)
	}
	return p, nil
}

// ownProject is project id if the caller may change it (its owner or an
// admin): forbidden for a member, not_found for anyone else.
func (ps *Projects) ownProject(ctx context.Context, id string) (Project, error) {
	p, err := ps.projectFor(ctx, id)
	if err != nil {
		return Project{}, err
	}
	if p.Role != ProjectOwner && !PrincipalFrom(ctx).Admin() {
		return Project{}, Errorf(CodeForbidden, "you are a %s of project %q: only its owner changes it", p.Role, p.Name)
	}
	return p, nil
}

// Project returns a project the caller sees.
func (ps *Projects) Project(ctx context.Context, id string) (Project, error) {
	return ps.projectFor(ctx, id)
}

// List lists the projects the caller sees (an admin: every project), by name.
func (ps *Projects) List(ctx context.Context) ([]Project, error) {
	all, err := ps.cfg.Store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	pr := PrincipalFrom(ctx)
	out := []Project{}
	for _, p := range all {
		p.Role = ps.cfg.Index.RoleOf(p, pr.UserID)
		if p.Role != "" || pr.Admin() {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Project) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, nil
}

// Create makes a project of the caller's.
func (ps *Projects) Create(ctx context.Context, in ProjectInput) (Project, error) {
	pr := PrincipalFrom(ctx)
	if pr.UserID == "" {
		return Project{}, Errorf(CodeUnauthorized, "sign in to make a project")
	}
	now := ps.now().UTC()
	p := Project{ID: "proj_" + NewID(), Owner: pr.UserID, Knowledge: []string{}, Members: []ProjectMember{}, CreatedAt: now, UpdatedAt: now}
	if in.Name == nil {
		return Project{}, Errorf(CodeBadRequest, "name is required")
	}
	if err := ps.apply(ctx, &p, in); err != nil {
		return Project{}, err
	}
	if err := ps.cfg.Store.PutProject(ctx, p); err != nil {
		return Project{}, err
	}
	ps.cfg.Index.putProject(p)
	p.Role = ProjectOwner
	return p, nil
}

// Update changes a project of the caller's (its owner, or an admin).
func (ps *Projects) Update(ctx context.Context, id string, in ProjectInput) (Project, error) {
	p, err := ps.ownProject(ctx, id)
	if err != nil {
		return Project{}, err
	}
	if err := ps.apply(ctx, &p, in); err != nil {
		return Project{}, err
	}
	p.UpdatedAt = ps.now().UTC()
	if err := ps.cfg.Store.PutProject(ctx, p); err != nil {
		return Project{}, err
	}
	ps.cfg.Index.putProject(p)
	return p, nil
}

// Delete deletes a project of the caller's: its conversations go back to
// their owners first (each moved out through the event log, so every
// stream and list sees it), then the project's rows go. A failure halfway
// leaves the project with fewer chats, never a chat lost.
func (ps *Projects) Delete(ctx context.Context, id string) error {
	if _, err := ps.ownProject(ctx, id); err != nil {
		return err
	}
	ids, err := ps.cfg.Store.ProjectConversations(ctx, id)
	if err != nil {
		return err
	}
	none := ""
	for _, cid := range ids {
		if err := ps.cfg.Runner.moveConversation(ctx, cid, none); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("delete project: move %s out: %w", cid, err)
		}
	}
	if err := ps.cfg.Store.DeleteProject(ctx, id); err != nil {
		return err
	}
	ps.cfg.Index.deleteProject(id)
	return nil
}

// apply checks in and sets it on p, before anything is written.
func (ps *Projects) apply(ctx context.Context, p *Project, in ProjectInput) error {
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		switch {
		case name == "":
			return Errorf(CodeBadRequest, "name must not be empty")
		case utf8.RuneCountInString(name) > maxProjectName:
			return Errorf(CodeBadRequest, "name is %d characters long; at most %d are allowed", utf8.RuneCountInString(name), maxProjectName)
		case !utf8.ValidString(name):
			return Errorf(CodeBadRequest, "name must be valid UTF-8")
		}
		p.Name = name
	}
	if in.Instructions != nil {
		if !utf8.ValidString(*in.Instructions) {
			return Errorf(CodeBadRequest, "instructions must be valid UTF-8")
		}
		if len(*in.Instructions) > maxProjectInstructions {
			return Errorf(CodeBadRequest, "instructions are %d bytes long; at most %d are allowed", len(*in.Instructions), maxProjectInstructions)
		}
		p.Instructions = *in.Instructions
	}
	if in.Agent != nil {
		slug := strings.TrimSpace(*in.Agent)
		if slug != "" {
			if _, err := ps.cfg.Runner.agent(ctx, slug); err != nil {
				return Errorf(ErrorCode(err), "agent: %s", errMessage(err))
			}
		}
		p.Agent = slug
	}
	if in.Knowledge != nil {
		ids := slices.Compact(slices.Clone(*in.Knowledge))
		if len(ids) > maxProjectKnowledge {
			return Errorf(CodeBadRequest, "knowledge has %d entries; at most %d are allowed", len(ids), maxProjectKnowledge)
		}
		if err := ps.cfg.Runner.checkConversationKnowledge(ctx, ids); err != nil {
			return err
		}
		p.Knowledge = ids
	}
	if in.Members != nil {
		ms, err := ps.checkMembers(ctx, p.Owner, *in.Members)
		if err != nil {
			return err
		}
		p.Members = ms
	}
	return nil
}

// checkMembers checks a member list: users and groups that exist, roles
// viewer or editor, no one twice, not the owner. The owner (or an admin)
// names any group: a project is shared with a group as an agent is,
// except that its owner need not be in it (they own the project, and the
// group's members learn nothing of the group by it).
func (ps *Projects) checkMembers(ctx context.Context, owner string, in []ProjectMember) ([]ProjectMember, error) {
	if len(in) > maxProjectMembers {
		return nil, Errorf(CodeBadRequest, "members has %d entries; at most %d are allowed", len(in), maxProjectMembers)
	}
	out := make([]ProjectMember, 0, len(in))
	seen := map[string]bool{}
	for i, m := range in {
		if m.GroupID != "" {
			if m.UserID != "" || m.Email != "" {
				return nil, Errorf(CodeBadRequest, "members[%d]: name a user (user_id or email) or a group (group_id), not both", i)
			}
			if m.Role != ProjectViewer && m.Role != ProjectEditor {
				return nil, Errorf(CodeBadRequest, "members[%d]: role must be %q or %q, got %q", i, ProjectViewer, ProjectEditor, Shorten(m.Role, 40))
			}
			if seen["g:"+m.GroupID] {
				return nil, Errorf(CodeBadRequest, "members[%d]: group %s is named twice", i, Shorten(m.GroupID, 80))
			}
			seen["g:"+m.GroupID] = true
			if err := ps.checkGroup(ctx, m.GroupID); err != nil {
				return nil, Errorf(ErrorCode(err), "members[%d]: %s", i, errMessage(err))
			}
			out = append(out, ProjectMember{GroupID: m.GroupID, Role: m.Role})
			continue
		}
		if m.UserID == "" && m.Email != "" {
			id, err := ps.userByEmail(ctx, m.Email)
			if err != nil {
				return nil, Errorf(ErrorCode(err), "members[%d]: %s", i, errMessage(err))
			}
			m.UserID = id
		}
		if m.UserID == "" {
			return nil, Errorf(CodeBadRequest, "members[%d]: user_id (or email) is required", i)
		}
		if m.Role != ProjectViewer && m.Role != ProjectEditor {
			return nil, Errorf(CodeBadRequest, "members[%d]: role must be %q or %q, got %q", i, ProjectViewer, ProjectEditor, Shorten(m.Role, 40))
		}
		if m.UserID == owner {
			return nil, Errorf(CodeBadRequest, "members[%d]: %s owns the project; the owner is its editor already", i, Shorten(m.UserID, 80))
		}
		if seen[m.UserID] {
			return nil, Errorf(CodeBadRequest, "members[%d]: %s is named twice", i, Shorten(m.UserID, 80))
		}
		seen[m.UserID] = true
		if us := ps.cfg.Runner.cfg.Users; us != nil {
			if _, err := us.User(ctx, m.UserID); err != nil {
				if errors.Is(err, ErrNotFound) {
					return nil, Errorf(CodeBadRequest, "members[%d]: no user %q", i, Shorten(m.UserID, 80))
				}
				return nil, err
			}
		}
		out = append(out, ProjectMember{UserID: m.UserID, Role: m.Role})
	}
	return out, nil
}

// checkGroup checks that group id exists: bad_request naming it when not.
func (ps *Projects) checkGroup(ctx context.Context, id string) error {
	if ps.cfg.Groups == nil {
		return Errorf(CodeBadRequest, "this server keeps no groups: name members by user_id")
	}
	_, err := ps.cfg.Groups.Group(ctx, id)
	if ErrorCode(err) == CodeNotFound {
		return Errorf(CodeBadRequest, "no group %q (GET /agentik/groups lists them)", Shorten(id, 80))
	}
	return err
}

// GroupNames names the groups among project id's members (for its page),
// to whoever sees the project; a group gone since is left out.
func (ps *Projects) GroupNames(ctx context.Context, id string) (map[string]string, error) {
	p, err := ps.projectFor(ctx, id)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if ps.cfg.Groups == nil {
		return out, nil
	}
	for _, m := range p.Members {
		if m.GroupID == "" {
			continue
		}
		g, err := ps.cfg.Groups.Group(ctx, m.GroupID)
		if ErrorCode(err) == CodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[g.ID] = g.Name
	}
	return out, nil
}

// userByEmail is the id of the user with that email: bad_request when
// there is none (the project's owner learns that no account has it).
func (ps *Projects) userByEmail(ctx context.Context, email string) (string, error) {
	us := ps.cfg.Runner.cfg.Users
	if us == nil {
		return "", Errorf(CodeBadRequest, "this server keeps no accounts: name members by user_id")
	}
	u, err := us.UserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, ErrNotFound) {
		return "", Errorf(CodeBadRequest, "no user has the email %q", Shorten(email, 120))
	}
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// checkProject checks that the caller may put a conversation in project
// id (its editor or owner, or an admin) and returns it: not_found when
// they do not see it, forbidden for its viewer.
func (r *Runner) checkProject(ctx context.Context, id string) (Project, error) {
	p, ok := r.cfg.Projects.project(id)
	pr := PrincipalFrom(ctx)
	role := r.cfg.Projects.RoleOf(p, pr.UserID)
	switch {
	case !ok || role == "" && !pr.Admin():
		return Project{}, errNoProject(id)
	case rank(role) < rank(ProjectEditor) && !pr.Admin():
		return Project{}, Errorf(CodeForbidden, "you are a viewer of project %q: only its editors and owner add chats to it", p.Name)
	}
	return p, nil
}

// moveConversation moves conversation id into project ("" out of its
// project) without a permission check: deleting a project gives its
// chats back to their owners.
func (r *Runner) moveConversation(ctx context.Context, id, project string) error {
	st := r.storeOf(id)
	rec := &Record{Event: r.agentEvent(AgentEvent{Type: AgentUpdated, ConversationID: id, Project: &project})}
	return st.Append(ctx, rec) // the index learns the move from its event (ProjectIndex.Committed)
}

// projectOf is the project of conversation c as the index has it.
func (r *Runner) projectOf(c Conversation) (Project, bool) {
	return r.cfg.Projects.project(c.Project)
}

// People returns the accounts of project id's owner and user members
// (their names and emails, for its page), to whoever sees the project.
func (ps *Projects) People(ctx context.Context, id string) (map[string]User, error) {
	p, err := ps.projectFor(ctx, id)
	if err != nil {
		return nil, err
	}
	out := map[string]User{}
	us := ps.cfg.Runner.cfg.Users
	if us == nil {
		return out, nil
	}
	ids := []string{p.Owner}
	for _, m := range p.Members {
		if m.UserID != "" {
			ids = append(ids, m.UserID)
		}
	}
	for _, uid := range ids {
		u, err := us.User(ctx, uid)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[uid] = User{ID: u.ID, Name: u.Name, Email: u.Email}
	}
	return out, nil
}
