package store

import (
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// TestGroupStore: groups and memberships on every backend: a name is
// unique, a member must be a user, a sync replaces only its source's
// memberships, set and remove are exact, and deleting a user or a group
// ends their memberships.
func TestGroupStore(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		s := open(t, dsn, Options{})
		now := time.Now().UTC()
		for _, id := range []string{"u1", "u2"} {
			if err := s.CreateUser(ctx, agent.User{ID: id, Name: id, Role: agent.RoleMember, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		eng := agent.Group{ID: "g1", Name: "eng", Source: agent.GroupSourceAdmin, Members: []string{"u1"}, CreatedAt: now}
		if err := s.CreateGroup(ctx, eng); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.CreateGroup(ctx, agent.Group{ID: "g2", Name: "eng", Source: agent.GroupSourceAdmin, CreatedAt: now}), agent.CodeConflict)
		wantCode(t, s.CreateGroup(ctx, agent.Group{ID: "g3", Name: "ops", Source: agent.GroupSourceAdmin, Members: []string{"nobody"}, CreatedAt: now}), agent.CodeNotFound)
		if _, err := s.GroupByName(ctx, "ops"); agent.ErrorCode(err) != agent.CodeNotFound {
			t.Errorf("a refused create left its group: %v", err)
		}
		if err := s.CreateGroup(ctx, agent.Group{ID: "g4", Name: "staff", Source: agent.GroupSourceOIDC, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		// The claim names staff only: u1 keeps the admin's eng.
		added, removed, err := s.SyncGroups(ctx, "u1", agent.GroupSourceOIDC, []string{"g1", "g4"})
		if err != nil || !slices.Equal(added, []string{"g4"}) || len(removed) != 0 {
			t.Fatalf("sync: %v %v %v", added, removed, err)
		}
		added, removed, err = s.SyncGroups(ctx, "u1", agent.GroupSourceOIDC, nil)
		if err != nil || len(added) != 0 || !slices.Equal(removed, []string{"g4"}) {
			t.Fatalf("sync to none: %v %v %v", added, removed, err)
		}
		if mine, _ := s.GroupsOf(ctx, "u1"); !slices.Equal(mine, []string{"g1"}) {
			t.Errorf("u1's groups after the syncs: %v, want the admin's g1 only", mine)
		}
		if err := s.SetMembers(ctx, "g1", []string{"u2"}, agent.GroupSourceSCIM); err != nil {
			t.Fatal(err)
		}
		if g, _ := s.Group(ctx, "g1"); !slices.Equal(g.Members, []string{"u2"}) {
			t.Errorf("after set: %+v", g)
		}
		wantCode(t, s.AddMembers(ctx, "g1", []string{"u1", "nobody"}, agent.GroupSourceAdmin), agent.CodeNotFound)
		if g, _ := s.Group(ctx, "g1"); !slices.Equal(g.Members, []string{"u2"}) {
			t.Errorf("a refused add changed the members: %+v", g)
		}
		wantCode(t, s.RenameGroup(ctx, "g1", "staff"), agent.CodeConflict)
		if err := s.DeleteUser(ctx, "u2"); err != nil {
			t.Fatal(err)
		}
		if g, _ := s.Group(ctx, "g1"); len(g.Members) != 0 {
			t.Errorf("a deleted user is still a member: %+v", g)
		}
		if err := s.AddMembers(ctx, "g1", []string{"u1"}, agent.GroupSourceAdmin); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteGroup(ctx, "g1"); err != nil {
			t.Fatal(err)
		}
		if mine, _ := s.GroupsOf(ctx, "u1"); len(mine) != 0 {
			t.Errorf("memberships of a deleted group: %v", mine)
		}
		wantCode(t, s.DeleteGroup(ctx, "g1"), agent.CodeNotFound)
	})
}
