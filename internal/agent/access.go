package agent

import (
	"context"
	"slices"
)

// The one rule of who may see what (DESIGN.md §11.1, §12.2): a
// conversation belongs to the user who made it (or imported it); an admin
// sees and acts on every conversation, a member on their own, and on the
// conversations of the projects they are in, as a user member or through
// a group member (the project rule): a project's viewer reads them, its
// editor (and its owner) also sends in them; only a conversation's owner deletes it or moves it between
// projects. Every use case of the Runner that names a conversation checks
// it here (access, readAccess, ownAccess), and every reader of many (the
// list, search, the event log's replay and live streams in package broker)
// narrows itself by Scope and Reach. Another user's conversation answers
// not_found, with the very error an unknown id gets, so that a member
// cannot tell that it exists; a project member who may read but not act
// gets forbidden naming their role.
//
// Things a member shares (agents) follow one rule too (viewer): seen by
// their owner, by everyone when shared, by the members of its groups when
// shared with groups, and by admins.

// Scope is the owner whose things ctx's principal may see: "" for an
// admin (everyone's), else the member's own user id.
func Scope(ctx context.Context) string {
	p := PrincipalFrom(ctx)
	if p.Admin() {
		return ""
	}
	if p.UserID == "" {
		return "\x00nobody" // no such user: sees nothing
	}
	return p.UserID
}

// listOwnerKey carries OwnedBy's owner.
type listOwnerKey struct{}

// OwnedBy narrows an admin's lists in ctx (Conversations, the agent and
// all streams) to owner's things: her own sidebar (owner = her id) and
// the admin panel's view of one user. A member's lists stay their own
// whatever owner says; access to a single thing is not narrowed.
func OwnedBy(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, listOwnerKey{}, owner)
}

// ListScope is Scope narrowed by OwnedBy: the owner whose things a list
// in ctx holds ("" for all of them).
func ListScope(ctx context.Context) string {
	scope := Scope(ctx)
	if o, ok := ctx.Value(listOwnerKey{}).(string); ok && o != "" && scope == "" {
		return o
	}
	return scope
}

// OwnerOf is the owner of c: a conversation of a database made before
// accounts, or of a test store that keeps none, belongs to LocalUser.
func OwnerOf(c Conversation) string {
	if c.Owner == "" {
		return LocalUser
	}
	return c.Owner
}

// CredentialOwner is whose tool credentials ctx's principal sets, lists
// and deletes: their own only, an admin's too (a credential acts as its
// owner, so no one else may read or plant it). No user: forbidden.
func CredentialOwner(ctx context.Context) (string, error) {
	if id := PrincipalFrom(ctx).UserID; id != "" {
		return id, nil
	}
	return "", Errorf(CodeForbidden, "tool credentials belong to a user: sign in")
}

// Visible reports whether a principal whose Scope is scope may see c by
// the owner rule alone (the project rule is the Runner's: Reach).
func Visible(scope string, c Conversation) bool {
	return scope == "" || OwnerOf(c) == scope
}

// Access levels of a use case on a conversation.
const (
	levelRead = iota // its history, its streams
	levelEdit        // send, interrupt, decide, branch, compact, settings
	levelOwn         // delete it, move it between projects
)

// roleOf is the role scope has on c: ProjectOwner for the conversation's
// owner (or an admin: scope ""), else its role in c's project, "" for none.
func (r *Runner) roleOf(scope string, c Conversation) string {
	if Visible(scope, c) {
		return ProjectOwner
	}
	if c.Project == "" {
		return ""
	}
	p, ok := r.cfg.Projects.project(c.Project)
	if !ok {
		return ""
	}
	return r.cfg.Projects.RoleOf(p, scope)
}

// allowed checks that scope may act on c at level: nil, not_found when
// scope does not see c, forbidden naming the role when it sees c but
// may not do this.
func (r *Runner) allowed(scope string, c Conversation, level int) error {
	role := r.roleOf(scope, c)
	switch {
	case role == "":
		return errHidden(c.ID)
	case role == ProjectOwner && OwnerOf(c) == scope || scope == "":
		return nil
	case level == levelOwn:
		return Errorf(CodeForbidden, "you are %s of this conversation's project: only the conversation's owner deletes it or moves it", article(role))
	case level == levelEdit && rank(role) < rank(ProjectEditor):
		return Errorf(CodeForbidden, "you are a viewer of this conversation's project: a viewer reads its chats; only its editors and owner send in them")
	}
	return nil
}

// article is role with its article ("a viewer", "an editor", "the owner").
func article(role string) string {
	switch role {
	case ProjectEditor:
		return "an editor"
	case ProjectOwner:
		return "the owner"
	}
	return "a " + role
}

// Reach is what a member's readers of many narrow themselves by besides
// their own conversations: the projects whose conversations they see
// (nil for an admin, who sees everything, or a user in none).
func (r *Runner) Reach(ctx context.Context) []string {
	scope := Scope(ctx)
	if scope == "" {
		return nil
	}
	return r.cfg.Projects.Reached(scope)
}

// ProjectIndex is the index the project rule reads (package broker asks
// it about live events).
func (r *Runner) ProjectIndex() *ProjectIndex { return r.cfg.Projects }

// viewer decides what ctx's principal sees of shared things: the one rule
// of agents' visibility (and of anything shared with a group). It reads
// the principal's groups once, when a thing shared with groups first asks,
// fresh at each use case (a membership ended is ended at the next read).
type viewer struct {
	ctx    context.Context
	scope  string
	groups GroupMembership // nil: nobody is in a group
	ids    []string        // the principal's groups, once read
	read   bool
}

// viewer is ctx's principal's viewer.
func (r *Runner) viewer(ctx context.Context) *viewer {
	return &viewer{ctx: ctx, scope: Scope(ctx), groups: r.cfg.Groups}
}

// sees reports whether the principal may see a thing of owner with
// visibility, shared with groups when visibility is VisibilityGroup.
func (v *viewer) sees(visibility, owner string, groups []string) bool {
	if v.scope == "" || owner == v.scope || visibility == VisibilityShared {
		return true
	}
	if visibility != VisibilityGroup {
		return false
	}
	mine := v.mine()
	return slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(mine, g) })
}

// mine are the principal's groups, read at the first call.
func (v *viewer) mine() []string {
	if !v.read && v.groups != nil {
		v.read = true
		ids, err := v.groups.GroupsOf(v.ctx, v.scope)
		if err == nil { // unread memberships show nothing
			v.ids = ids
		}
	}
	return v.ids
}

// inGroups reports whether the principal is in every group of ids (an
// admin counts as in all): a member shares only with their own groups.
func (v *viewer) inGroups(ids []string) bool {
	if v.scope == "" {
		return true
	}
	mine := v.mine()
	return !slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(mine, id) })
}

// errHidden is the error of a conversation the caller may not see: the
// store's own not_found for an unknown id.
func errHidden(id string) error {
	return Errorf(CodeNotFound, "conversation %q not found", id)
}

// access checks that ctx's principal may act on conversation id (send in
// it, decide its calls, change its settings): nil, not_found (also for an
// unknown id), or forbidden for a project's viewer. An admin reads
// nothing here.
func (r *Runner) access(ctx context.Context, id string) error {
	return r.accessAt(ctx, id, levelEdit)
}

// readAccess checks that ctx's principal may read conversation id.
func (r *Runner) readAccess(ctx context.Context, id string) error {
	return r.accessAt(ctx, id, levelRead)
}

// ownAccess checks that ctx's principal may delete conversation id or
// move it between projects.
func (r *Runner) ownAccess(ctx context.Context, id string) error {
	return r.accessAt(ctx, id, levelOwn)
}

func (r *Runner) accessAt(ctx context.Context, id string, level int) error {
	scope := Scope(ctx)
	if scope == "" {
		return nil
	}
	c, err := r.storeOf(id).Conversation(ctx, id)
	if err != nil {
		return err
	}
	return r.allowed(scope, c, level)
}

// OwnerLister lists one owner's conversations (the database implements
// it, for temp conversations too; ConversationsConfig.Lister): a
// member's list reads only theirs and those of the projects they reach.
type OwnerLister interface {
	// ConversationsOf is Conversations of the conversations owner owns
	// or that are in one of projects.
	ConversationsOf(ctx context.Context, owner string, projects []string, offset, limit int) ([]Conversation, int, error)
}

// conversationsOf lists the conversations of st that scope sees, with
// reach the projects it sees the conversations of: all of st's for an
// admin, else those ol (st's lister) lists.
func conversationsOf(ctx context.Context, st Store, ol OwnerLister, scope string, reach []string, offset, limit int) ([]Conversation, int, error) {
	if scope == "" {
		return st.Conversations(ctx, offset, limit)
	}
	return ol.ConversationsOf(ctx, scope, reach, offset, limit)
}

// search runs q on searcher over the conversations ctx's principal sees
// (Conversations.Search, the memory_search tool).
func (r *Runner) search(ctx context.Context, searcher Searcher, q SearchQuery) ([]SearchResult, error) {
	q.Owner, q.Projects = Scope(ctx), r.Reach(ctx)
	return searcher.Search(ctx, q)
}

// ScopeEvents narrows an event query to what ctx's principal sees: a
// member reads their own conversations' events and those of the projects
// they reach only.
func (r *Runner) ScopeEvents(ctx context.Context, q EventQuery) EventQuery {
	q.Owner, q.Projects = Scope(ctx), r.Reach(ctx)
	return q
}

// ownSources makes an import the importer's: each conversation is theirs,
// and its source id is kept apart from the same source imported by
// someone else (a member importing a file another user imported gets
// their own copy, and learns nothing of the other's).
func ownSources(ctx context.Context, convs []ImportConversation) []ImportConversation {
	owner := PrincipalFrom(ctx).UserID
	out := make([]ImportConversation, len(convs))
	for i, c := range convs {
		c.owner = owner
		if owner != LocalUser && c.Source != "" {
			c.Source = owner + "\x1f" + c.Source
		}
		out[i] = c
	}
	return out
}
