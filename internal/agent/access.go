package agent

import (
	"context"
	"fmt"
	"slices"
)

// The one rule of who may see what (DESIGN.md §11.1): a conversation
// belongs to the user who made it (or imported it); an admin sees and acts
// on every conversation, a member on their own only. Every use case of the
// Runner that names a conversation checks it here (access), and every
// reader of many (the list, search, the event log's replay and live
// streams in package broker) narrows itself by Scope. Another user's
// conversation answers not_found, with the very error an unknown id gets,
// so that a member cannot tell that it exists.
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

// OwnerOf is the owner of c: a conversation of a database made before
// accounts, or of a test store that keeps none, belongs to LocalUser.
func OwnerOf(c Conversation) string {
	if c.Owner == "" {
		return LocalUser
	}
	return c.Owner
}

// Visible reports whether a principal whose Scope is scope may see c.
func Visible(scope string, c Conversation) bool {
	return scope == "" || OwnerOf(c) == scope
}

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

// access checks that ctx's principal may act on conversation id: nil, or
// not_found (also for an unknown id). An admin reads nothing here.
func (r *Runner) access(ctx context.Context, id string) error {
	scope := Scope(ctx)
	if scope == "" {
		return nil
	}
	c, err := r.storeOf(id).Conversation(ctx, id)
	if err != nil {
		return err
	}
	if !Visible(scope, c) {
		return errHidden(id)
	}
	return nil
}

// OwnerLister is a Store that lists one owner's conversations (the
// database implements it, for temp conversations too): a member's list
// reads only theirs.
type OwnerLister interface {
	// ConversationsOf is Conversations of the conversations owner owns.
	ConversationsOf(ctx context.Context, owner string, offset, limit int) ([]Conversation, int, error)
}

// conversationsOf lists st's conversations that scope sees.
func conversationsOf(ctx context.Context, st Store, scope string, offset, limit int) ([]Conversation, int, error) {
	if scope == "" {
		return st.Conversations(ctx, offset, limit)
	}
	ol, ok := st.(OwnerLister)
	if !ok {
		return nil, 0, fmt.Errorf("the store %T cannot list one owner's conversations", st)
	}
	return ol.ConversationsOf(ctx, scope, offset, limit)
}

// Search runs q on searcher over the conversations ctx's principal sees.
func (r *Runner) Search(ctx context.Context, searcher Searcher, q SearchQuery) ([]SearchResult, error) {
	q.Owner = Scope(ctx)
	return searcher.Search(ctx, q)
}

// ScopeEvents narrows an event query to what ctx's principal sees: a
// member reads their own conversations' events only.
func ScopeEvents(ctx context.Context, q EventQuery) EventQuery {
	q.Owner = Scope(ctx)
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
