package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// The group ops (DESIGN.md §12.5), each the REST route under
// /agentik/groups and the WebSocket op of its name: an admin makes,
// renames and deletes groups and their members; a member lists the groups
// they are in (those they may share an agent with). agent.Groups decides.

// groupOp declares a group op: run gets the groups (unavailable when the
// store keeps none).
func groupOp[T any](name string, status int, run func(ctx context.Context, g *agent.Groups, in T) (any, error)) *op {
	return declare(name, status, func(ctx context.Context, s *Server, in T) (any, error) {
		if s.people.groups == nil {
			return nil, agent.Errorf(agent.CodeUnavailable, "this server's store keeps no groups")
		}
		return run(ctx, s.people.groups, in)
	})
}

// groupRef names one group: the route's {group_id}.
type groupRef struct {
	ID string `json:"group_id"`
}

func (r *groupRef) check() error { return need("group_id", r.ID) }

// groupInput is create_group's and update_group's fields.
type groupInput struct {
	ID      string   `json:"group_id"` // update_group
	Name    string   `json:"name"`
	Members []string `json:"members"` // create_group: user ids
}

// memberRef names a member of a group: {group_id} and {user_id}.
type memberRef struct {
	GroupID string `json:"group_id"`
	UserID  string `json:"user_id"`
}

func (r *memberRef) check() error {
	if err := need("group_id", r.GroupID); err != nil {
		return err
	}
	return need("user_id", r.UserID)
}

// groupsResult is the result of list_groups.
type groupsResult struct {
	Groups []agent.Group `json:"groups"`
}

var (
	opListGroups = groupOp(protocol.OpListGroups, 0, func(ctx context.Context, g *agent.Groups, _ struct{}) (any, error) {
		gs, err := g.List(ctx)
		if err != nil {
			return nil, err
		}
		return groupsResult{Groups: nonNil(gs)}, nil
	})
	opCreateGroup = groupOp(protocol.OpCreateGroup, http.StatusCreated, func(ctx context.Context, g *agent.Groups, in groupInput) (any, error) {
		return g.Create(ctx, in.Name, in.Members, agent.GroupSourceAdmin)
	})
	opGetGroup = groupOp(protocol.OpGetGroup, 0, func(ctx context.Context, g *agent.Groups, in groupRef) (any, error) {
		return g.Get(ctx, in.ID)
	})
	opUpdateGroup = groupOp(protocol.OpUpdateGroup, 0, func(ctx context.Context, g *agent.Groups, in groupInput) (any, error) {
		if err := need("group_id", in.ID); err != nil {
			return nil, err
		}
		return g.Rename(ctx, in.ID, in.Name)
	})
	opDeleteGroup = groupOp(protocol.OpDeleteGroup, 0, func(ctx context.Context, g *agent.Groups, in groupRef) (any, error) {
		return okReply{OK: true}, g.Delete(ctx, in.ID)
	})
	opAddGroupMember = groupOp(protocol.OpAddGroupMember, 0, func(ctx context.Context, g *agent.Groups, in memberRef) (any, error) {
		return g.AddMembers(ctx, in.GroupID, []string{in.UserID}, agent.GroupSourceAdmin)
	})
	opRemoveGroupMember = groupOp(protocol.OpRemoveGroupMember, 0, func(ctx context.Context, g *agent.Groups, in memberRef) (any, error) {
		return g.RemoveMembers(ctx, in.GroupID, []string{in.UserID})
	})
)
