package web

// ProjectsPage is the page of projects: /projects, and one project's at
// /projects/{id} (Project set).
type ProjectsPage struct {
	Projects []ProjectRow
	Project  *ProjectDetail // the project of /projects/{id}
	Agents   []AgentOption
}

// ProjectRow is one project in the list.
type ProjectRow struct {
	ID, Name, Role string
	Members        int
}

// ProjectDetail is one project as its page shows it. CanEdit: the
// caller is its owner (or an admin), who changes it.
type ProjectDetail struct {
	ID, Name, Instructions, Agent, Role string
	OwnerName                           string
	CanEdit                             bool
	Members                             []MemberRow
	Knowledge                           []KnowledgeOption
	Groups                              []GroupOption // the groups the editor may add

	Chats []ConversationItem
}

// MemberRow is a member of a project: a user (their id, name and email)
// or a group (its id and name), and the role.
type MemberRow struct {
	UserID, GroupID, Name, Email, Role string
}

// GroupOption is a group a project may be shared with.
type GroupOption struct {
	ID, Name string
}

// KnowledgeOption is a knowledge base the project may search: Checked
// when it does.
type KnowledgeOption struct {
	ID, Name string
	Checked  bool
}
