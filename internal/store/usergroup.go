package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.GroupStore = (*Store)(nil)

// groupRow is a group of users (agent.Group). (group.go is the writer's
// group commit; this file is the noun.)
type groupRow struct {
	ID        string    `gorm:"primaryKey"`
	Name      string    `gorm:"not null;uniqueIndex"`
	Source    string    `gorm:"not null"`
	CreatedAt time.Time `gorm:"not null"`
}

func (groupRow) TableName() string { return "user_group" }

// groupMemberRow is one user's membership of a group, with where it came
// from (agent.GroupSourceAdmin, …): a sign-in replaces only its own.
type groupMemberRow struct {
	GroupID string `gorm:"primaryKey"`
	UserID  string `gorm:"primaryKey;index"`
	Source  string `gorm:"not null"`
}

func (groupMemberRow) TableName() string { return "user_group_member" }

// groupTables are the tables of groups, for init's migration.
var groupTables = []any{&groupRow{}, &groupMemberRow{}}

// membersOf returns the members of the groups ids, by group.
func membersOf(db *gorm.DB, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	for chunk := range slices.Chunk(ids, idChunk) {
		var rows []groupMemberRow
		if err := db.Where("group_id IN ?", chunk).Order("group_id, user_id").Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.GroupID] = append(out[r.GroupID], r.UserID)
		}
	}
	return out, nil
}

func (s *Store) groupsWhere(ctx context.Context, q string, args ...any) ([]agent.Group, error) {
	var rows []groupRow
	db := s.r.WithContext(ctx)
	if q != "" {
		db = db.Where(q, args...)
	}
	if err := db.Order("name, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	members, err := membersOf(s.r.WithContext(ctx), ids)
	if err != nil {
		return nil, err
	}
	out := make([]agent.Group, len(rows))
	for i, r := range rows {
		out[i] = agent.Group{ID: r.ID, Name: r.Name, Source: r.Source, CreatedAt: r.CreatedAt.UTC(), Members: append([]string{}, members[r.ID]...)}
	}
	return out, nil
}

func (s *Store) groupWhere(ctx context.Context, what, q string, args ...any) (agent.Group, error) {
	gs, err := s.groupsWhere(ctx, q, args...)
	if err != nil {
		return agent.Group{}, fmt.Errorf("store: group: %w", err)
	}
	if len(gs) == 0 {
		return agent.Group{}, missing("group", what)
	}
	return gs[0], nil
}

// Group implements agent.GroupStore.
func (s *Store) Group(ctx context.Context, id string) (agent.Group, error) {
	if !textOK(id) {
		return agent.Group{}, missing("group", id)
	}
	return s.groupWhere(ctx, id, "id = ?", id)
}

// GroupByName implements agent.GroupStore.
func (s *Store) GroupByName(ctx context.Context, name string) (agent.Group, error) {
	if !textOK(name) {
		return agent.Group{}, missing("group", name)
	}
	return s.groupWhere(ctx, name, "name = ?", name)
}

// Groups implements agent.GroupStore.
func (s *Store) Groups(ctx context.Context) ([]agent.Group, error) {
	gs, err := s.groupsWhere(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("store: groups: %w", err)
	}
	return gs, nil
}

// knownUsers is not_found unless every one of ids is a user.
func knownUsers(tx *gorm.DB, ids []string) error {
	for chunk := range slices.Chunk(ids, idChunk) {
		var found []string
		if err := tx.Model(&userRow{}).Where("id IN ?", chunk).Pluck("id", &found).Error; err != nil {
			return err
		}
		for _, id := range chunk {
			if !slices.Contains(found, id) {
				return missing("user", id)
			}
		}
	}
	return nil
}

// addMembers inserts memberships of source; existing ones stay as they are.
func addMembers(tx *gorm.DB, groupID string, userIDs []string, source string) error {
	if len(userIDs) == 0 {
		return nil
	}
	if err := knownUsers(tx, userIDs); err != nil {
		return err
	}
	rows := make([]groupMemberRow, len(userIDs))
	for i, u := range userIDs {
		rows[i] = groupMemberRow{GroupID: groupID, UserID: u, Source: source}
	}
	return tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, idChunk).Error
}

// groupExists is not_found for an unknown group.
func groupExists(tx *gorm.DB, id string) error {
	var n int64
	if err := tx.Model(&groupRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return missing("group", id)
	}
	return nil
}

// CreateGroup implements agent.GroupStore.
func (s *Store) CreateGroup(ctx context.Context, g agent.Group) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := groupRow{ID: g.ID, Name: g.Name, Source: g.Source, CreatedAt: g.CreatedAt.UTC().Truncate(time.Microsecond)}
		if err := tx.Create(&row).Error; err != nil {
			return taken(err, "a group of this name exists already")
		}
		return addMembers(tx, g.ID, g.Members, g.Source)
	})
	if err != nil {
		return fmt.Errorf("store: create group: %w", err)
	}
	return nil
}

// RenameGroup implements agent.GroupStore.
func (s *Store) RenameGroup(ctx context.Context, id, name string) error {
	res := s.w.WithContext(ctx).Model(&groupRow{}).Where("id = ?", id).Update("name", name)
	if res.Error != nil {
		return fmt.Errorf("store: rename group: %w", taken(res.Error, "a group of this name exists already"))
	}
	if res.RowsAffected == 0 {
		return missing("group", id)
	}
	return nil
}

// DeleteGroup implements agent.GroupStore.
func (s *Store) DeleteGroup(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("group_id = ?", id).Delete(&groupMemberRow{}).Error; err != nil {
			return err
		}
		if err := tx.Where("group_id = ?", id).Delete(&projectMemberRow{}).Error; err != nil { // its rows in projects (project.go)
			return err
		}
		res := tx.Where("id = ?", id).Delete(&groupRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return missing("group", id)
		}
		return s.notifyProject(tx, "")
	})
	if err != nil {
		return fmt.Errorf("store: delete group: %w", err)
	}
	return nil
}

// AddMembers implements agent.GroupStore.
func (s *Store) AddMembers(ctx context.Context, groupID string, userIDs []string, source string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := groupExists(tx, groupID); err != nil {
			return err
		}
		if err := addMembers(tx, groupID, userIDs, source); err != nil {
			return err
		}
		return s.notifyProject(tx, "") // a group's rows in projects grant its users (project.go)
	})
	if err != nil {
		return fmt.Errorf("store: add members: %w", err)
	}
	return nil
}

// RemoveMembers implements agent.GroupStore.
func (s *Store) RemoveMembers(ctx context.Context, groupID string, userIDs []string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := groupExists(tx, groupID); err != nil {
			return err
		}
		for chunk := range slices.Chunk(userIDs, idChunk) {
			if err := tx.Where("group_id = ? AND user_id IN ?", groupID, chunk).Delete(&groupMemberRow{}).Error; err != nil {
				return err
			}
		}
		return s.notifyProject(tx, "")
	})
	if err != nil {
		return fmt.Errorf("store: remove members: %w", err)
	}
	return nil
}

// SetMembers implements agent.GroupStore.
func (s *Store) SetMembers(ctx context.Context, groupID string, userIDs []string, source string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := groupExists(tx, groupID); err != nil {
			return err
		}
		var have []string
		if err := tx.Model(&groupMemberRow{}).Where("group_id = ?", groupID).Pluck("user_id", &have).Error; err != nil {
			return err
		}
		var gone []string
		for _, u := range have {
			if !slices.Contains(userIDs, u) {
				gone = append(gone, u)
			}
		}
		for chunk := range slices.Chunk(gone, idChunk) {
			if err := tx.Where("group_id = ? AND user_id IN ?", groupID, chunk).Delete(&groupMemberRow{}).Error; err != nil {
				return err
			}
		}
		if err := addMembers(tx, groupID, userIDs, source); err != nil {
			return err
		}
		return s.notifyProject(tx, "")
	})
	if err != nil {
		return fmt.Errorf("store: set members: %w", err)
	}
	return nil
}

// GroupsOf implements agent.GroupStore (and agent.GroupMembership).
func (s *Store) GroupsOf(ctx context.Context, userID string) ([]string, error) {
	var ids []string
	if err := s.r.WithContext(ctx).Model(&groupMemberRow{}).Where("user_id = ?", userID).Order("group_id").Pluck("group_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("store: groups of: %w", err)
	}
	return ids, nil
}

// SyncGroups implements agent.GroupStore.
func (s *Store) SyncGroups(ctx context.Context, userID, source string, groupIDs []string) (added, removed []string, err error) {
	err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		added, removed = nil, nil
		var mine []groupMemberRow
		if err := tx.Where("user_id = ?", userID).Find(&mine).Error; err != nil {
			return err
		}
		for _, m := range mine {
			if m.Source == source && !slices.Contains(groupIDs, m.GroupID) {
				removed = append(removed, m.GroupID)
			}
		}
		for _, g := range groupIDs {
			if !slices.ContainsFunc(mine, func(m groupMemberRow) bool { return m.GroupID == g }) {
				added = append(added, g)
			}
		}
		for chunk := range slices.Chunk(removed, idChunk) {
			if err := tx.Where("user_id = ? AND source = ? AND group_id IN ?", userID, source, chunk).Delete(&groupMemberRow{}).Error; err != nil {
				return err
			}
		}
		for _, g := range added {
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&groupMemberRow{GroupID: g, UserID: userID, Source: source}).Error; err != nil {
				return err
			}
		}
		if len(added) == 0 && len(removed) == 0 {
			return nil
		}
		return s.notifyProject(tx, "")
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: sync groups: %w", err)
	}
	return added, removed, nil
}
