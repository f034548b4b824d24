package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Groups (DESIGN.md §12.3): a named set of users, made by an admin,
// provisioned by SCIM, or named by an OpenID provider's groups claim and
// synced at each sign-in. An agent shared with a group (visibility
// "group", its groups) is seen by the group's members (access.go decides,
// for every surface). Each membership keeps where it came from, so that a
// sign-in replaces only the memberships its claim made, never an admin's.

// Where a group or a membership came from.
const (
	GroupSourceAdmin = "admin" // an admin's REST call or the CLI
	GroupSourceOIDC  = "oidc"  // the groups claim of a sign-in
	GroupSourceSCIM  = "scim"  // an identity provider's provisioning
)

// Limits of groups.
const (
	MaxGroupNameBytes = 200
	// MaxClaimGroups is how many groups of one sign-in's claim are
	// synced; the rest are ignored (and logged).
	MaxClaimGroups = 200
)

// Group is a named set of users.
type Group struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	Members   []string  `json:"members"` // user ids, sorted
	CreatedAt time.Time `json:"created_at"`
}

// GroupStore keeps groups and their memberships (the database, package
// store, implements it).
type GroupStore interface {
	// CreateGroup stores g with its members (of g.Source); conflict when
	// its name is taken, not_found when a member is no user.
	CreateGroup(ctx context.Context, g Group) error
	// Group returns a group with its members, or not_found.
	Group(ctx context.Context, id string) (Group, error)
	// GroupByName returns the group of that name, or not_found.
	GroupByName(ctx context.Context, name string) (Group, error)
	// Groups lists every group with its members, by name.
	Groups(ctx context.Context) ([]Group, error)
	// RenameGroup renames a group: conflict when the name is taken.
	RenameGroup(ctx context.Context, id, name string) error
	// DeleteGroup deletes a group and its memberships.
	DeleteGroup(ctx context.Context, id string) error
	// AddMembers makes users members of a group (those already members
	// keep their membership and its source); not_found for an unknown
	// group or user, and then nothing is added.
	AddMembers(ctx context.Context, groupID string, userIDs []string, source string) error
	// RemoveMembers ends users' memberships of a group (not members: no
	// change); not_found for an unknown group.
	RemoveMembers(ctx context.Context, groupID string, userIDs []string) error
	// SetMembers makes exactly userIDs the members of a group, in one
	// transaction (new ones of source).
	SetMembers(ctx context.Context, groupID string, userIDs []string, source string) error
	// GroupsOf returns the ids of the groups user is a member of.
	GroupsOf(ctx context.Context, userID string) ([]string, error)
	// SyncGroups makes groupIDs exactly the user's memberships of source
	// (the others stay), in one transaction, and says what changed.
	SyncGroups(ctx context.Context, userID, source string, groupIDs []string) (added, removed []string, err error)
}

// Groups manages groups: an admin (or SCIM, which acts as one) reads and
// changes them; a sign-in syncs its claim.
type Groups struct {
	st    GroupStore
	now   Clock
	audit *Audit
	index *ProjectIndex // told every committed change (nil: none)
}

// NewGroups makes Groups over st, recording its changes in audit (nil:
// none).
func NewGroups(st GroupStore, now Clock, audit *Audit) *Groups {
	if now == nil {
		now = time.Now
	}
	return &Groups{st: st, now: now, audit: audit}
}

// Mirror makes g tell x every membership it commits, so that the project
// rule (a group's row in a project) follows at once; it returns g.
func (g *Groups) Mirror(x *ProjectIndex) *Groups {
	g.index = x
	return g
}

// mirror tells the index group id's members as the store has them now.
func (g *Groups) mirror(ctx context.Context, id string) {
	if g.index == nil {
		return
	}
	grp, err := g.st.Group(context.WithoutCancel(ctx), id)
	if ErrorCode(err) == CodeNotFound {
		g.index.DropGroup(id)
		return
	}
	if err == nil {
		g.index.SetGroup(id, grp.Members)
	}
}

func checkGroupName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > MaxGroupNameBytes || !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' }) {
		return "", Errorf(CodeBadRequest, "a group's name must be 1 to %d bytes of text", MaxGroupNameBytes)
	}
	return name, nil
}

func checkSource(source string) error {
	switch source {
	case GroupSourceAdmin, GroupSourceOIDC, GroupSourceSCIM:
		return nil
	}
	return fmt.Errorf("group source %q is none of admin, oidc, scim", source)
}

func groupNameTaken(name string) error {
	return Errorf(CodeConflict, "a group named %q exists already", Shorten(name, 80))
}

// List lists every group to an admin; to a member the groups they are in
// (those they may share with).
func (g *Groups) List(ctx context.Context) ([]Group, error) {
	all, err := g.st.Groups(ctx)
	if err != nil || PrincipalFrom(ctx).Admin() {
		return all, err
	}
	me := PrincipalFrom(ctx).UserID
	return slices.DeleteFunc(all, func(grp Group) bool { return !slices.Contains(grp.Members, me) }), nil
}

// Get returns one group: to an admin any, to a member one they are in
// (else not_found).
func (g *Groups) Get(ctx context.Context, id string) (Group, error) {
	grp, err := g.st.Group(ctx, id)
	if err != nil {
		return Group{}, err
	}
	if p := PrincipalFrom(ctx); !p.Admin() && !slices.Contains(grp.Members, p.UserID) {
		return Group{}, Errorf(CodeNotFound, "group %q not found", Shorten(id, 80))
	}
	return grp, nil
}

// changeable is a group an admin changes: forbidden for a member.
func (g *Groups) changeable(ctx context.Context, id string) (Group, error) {
	if !PrincipalFrom(ctx).Admin() {
		return Group{}, errAdminOnly()
	}
	return g.st.Group(ctx, id)
}

// ByName returns the group of that name (admin only).
func (g *Groups) ByName(ctx context.Context, name string) (Group, error) {
	if !PrincipalFrom(ctx).Admin() {
		return Group{}, errAdminOnly()
	}
	return g.st.GroupByName(ctx, strings.TrimSpace(name))
}

// Create makes a group of source with members (admin only).
func (g *Groups) Create(ctx context.Context, name string, members []string, source string) (Group, error) {
	if !PrincipalFrom(ctx).Admin() {
		return Group{}, errAdminOnly()
	}
	if err := checkSource(source); err != nil {
		return Group{}, err
	}
	name, err := checkGroupName(name)
	if err != nil {
		return Group{}, err
	}
	grp := Group{ID: "grp_" + NewID(), Name: name, Source: source, Members: sortedIDs(members), CreatedAt: g.now().UTC().Truncate(time.Microsecond)}
	if err := g.st.CreateGroup(ctx, grp); err != nil {
		if ErrorCode(err) == CodeConflict {
			return Group{}, groupNameTaken(name)
		}
		return Group{}, err
	}
	g.index.SetGroup(grp.ID, grp.Members)
	g.audit.Record(ctx, AuditGroupCreated, grp.ID, map[string]any{"name": grp.Name, "source": source, "members": grp.Members})
	return grp, nil
}

// Rename renames a group (admin only).
func (g *Groups) Rename(ctx context.Context, id, name string) (Group, error) {
	old, err := g.changeable(ctx, id)
	if err != nil {
		return Group{}, err
	}
	if name, err = checkGroupName(name); err != nil {
		return Group{}, err
	}
	if name == old.Name {
		return old, nil
	}
	if err := g.st.RenameGroup(ctx, id, name); err != nil {
		if ErrorCode(err) == CodeConflict {
			return Group{}, groupNameTaken(name)
		}
		return Group{}, err
	}
	g.audit.Record(ctx, AuditGroupRenamed, id, map[string]string{"from": old.Name, "to": name})
	old.Name = name
	return old, nil
}

// Delete deletes a group (admin only): what was shared with it is its
// owners' again.
func (g *Groups) Delete(ctx context.Context, id string) error {
	old, err := g.changeable(ctx, id)
	if err != nil {
		return err
	}
	if err := g.st.DeleteGroup(ctx, id); err != nil {
		return err
	}
	g.index.DropGroup(id)
	g.audit.Record(ctx, AuditGroupDeleted, id, map[string]string{"name": old.Name})
	return nil
}

// AddMembers makes users members of a group (admin only); source says who
// added them.
func (g *Groups) AddMembers(ctx context.Context, id string, userIDs []string, source string) (Group, error) {
	old, err := g.changeable(ctx, id)
	if err != nil {
		return Group{}, err
	}
	if err := checkSource(source); err != nil {
		return Group{}, err
	}
	added := without(sortedIDs(userIDs), old.Members)
	if len(added) > 0 {
		if err := g.st.AddMembers(ctx, id, added, source); err != nil {
			return Group{}, err
		}
		g.mirror(ctx, id)
		g.audit.Record(ctx, AuditGroupMembers, id, map[string]any{"added": added})
	}
	return g.st.Group(ctx, id)
}

// RemoveMembers ends users' memberships of a group (admin only).
func (g *Groups) RemoveMembers(ctx context.Context, id string, userIDs []string) (Group, error) {
	old, err := g.changeable(ctx, id)
	if err != nil {
		return Group{}, err
	}
	removed := slices.DeleteFunc(sortedIDs(userIDs), func(u string) bool { return !slices.Contains(old.Members, u) })
	if len(removed) > 0 {
		if err := g.st.RemoveMembers(ctx, id, removed); err != nil {
			return Group{}, err
		}
		g.mirror(ctx, id)
		g.audit.Record(ctx, AuditGroupMembers, id, map[string]any{"removed": removed})
	}
	return g.st.Group(ctx, id)
}

// SetMembers makes exactly userIDs the members of a group (admin only;
// SCIM's replace).
func (g *Groups) SetMembers(ctx context.Context, id string, userIDs []string, source string) (Group, error) {
	old, err := g.changeable(ctx, id)
	if err != nil {
		return Group{}, err
	}
	if err := checkSource(source); err != nil {
		return Group{}, err
	}
	want := sortedIDs(userIDs)
	added, removed := without(want, old.Members), without(old.Members, want)
	if len(added) == 0 && len(removed) == 0 {
		return old, nil
	}
	if err := g.st.SetMembers(ctx, id, want, source); err != nil {
		return Group{}, err
	}
	g.mirror(ctx, id)
	g.audit.Record(ctx, AuditGroupMembers, id, map[string]any{"added": added, "removed": removed})
	return g.st.Group(ctx, id)
}

// SyncClaim makes the groups an OpenID provider's groups claim names
// exactly user's memberships of source oidc, at a sign-in: a group of a
// name no group has is made (source oidc); memberships an admin or SCIM
// made stay. It is the sign-in's own work (no admin needed); changes are
// recorded as the user's.
func (g *Groups) SyncClaim(ctx context.Context, userID string, names []string) error {
	if len(names) > MaxClaimGroups {
		names = names[:MaxClaimGroups]
	}
	var ids []string
	for _, n := range names {
		name, err := checkGroupName(n)
		if err != nil {
			continue // a claim value agentik cannot name a group by
		}
		grp, err := g.st.GroupByName(ctx, name)
		if ErrorCode(err) == CodeNotFound {
			grp = Group{ID: "grp_" + NewID(), Name: name, Source: GroupSourceOIDC, Members: []string{}, CreatedAt: g.now().UTC().Truncate(time.Microsecond)}
			err = g.st.CreateGroup(ctx, grp)
			if err == nil {
				g.audit.RecordAs(ctx, userID, AuditGroupCreated, grp.ID, map[string]any{"name": name, "source": GroupSourceOIDC})
			} else if ErrorCode(err) == CodeConflict { // made meanwhile by another sign-in
				grp, err = g.st.GroupByName(ctx, name)
			}
		}
		if err != nil {
			return fmt.Errorf("sync groups: %w", err)
		}
		ids = append(ids, grp.ID)
	}
	added, removed, err := g.st.SyncGroups(ctx, userID, GroupSourceOIDC, sortedIDs(ids))
	if err != nil {
		return fmt.Errorf("sync groups: %w", err)
	}
	for _, id := range slices.Concat(added, removed) {
		g.mirror(ctx, id)
	}
	if len(added) > 0 || len(removed) > 0 {
		g.audit.RecordAs(ctx, userID, AuditGroupSynced, userID, map[string]any{"added": added, "removed": removed, "source": GroupSourceOIDC})
	}
	return nil
}

// sortedIDs is ids sorted, without duplicates or empty ones, never nil.
func sortedIDs(ids []string) []string {
	out := slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == "" })
	slices.Sort(out)
	return append([]string{}, slices.Compact(out)...)
}

// without is a without the elements of b.
func without(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// GroupMembership answers which groups a user is in: the one fact the
// permission check (access.go) needs of groups.
type GroupMembership interface {
	GroupsOf(ctx context.Context, userID string) ([]string, error)
}
