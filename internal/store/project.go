package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

// Projects (agent/project.go) are side tables, written outside the event
// log: a project's row and one row per member. A conversation names its
// project in its own row (conversation.project), which only the event log
// writes (created and updated events), so lists, search and replays read
// it in the same transaction as everything else of the conversation.

// projectRow is a project; Knowledge is the JSON list of its bases.
type projectRow struct {
	ID           string `gorm:"primaryKey"`
	Owner        string `gorm:"not null;index"`
	Name         string `gorm:"not null"`
	Instructions string `gorm:"type:text;not null;default:''"`
	Agent        string `gorm:"not null;default:''"`
	Knowledge    string `gorm:"type:text;not null;default:'[]'"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (projectRow) TableName() string { return "project" }

// projectMemberRow is a member of a project: a user, or (GroupID, once
// groups exist) a group, with a role.
type projectMemberRow struct {
	ProjectID string `gorm:"primaryKey"`
	UserID    string `gorm:"primaryKey;default:'';index"`
	GroupID   string `gorm:"primaryKey;default:''"`
	Role      string `gorm:"not null"`
	Position  int    `gorm:"not null;default:0"`
}

func (projectMemberRow) TableName() string { return "project_member" }

var projectTables = []any{&projectRow{}, &projectMemberRow{}}

var _ agent.ProjectStore = (*Store)(nil)

// PutProject implements agent.ProjectStore.
func (s *Store) PutProject(ctx context.Context, p agent.Project) error {
	for _, f := range [][2]string{{"name", p.Name}, {"instructions", p.Instructions}, {"agent", p.Agent}} {
		if err := checkText(f[0], f[1]); err != nil {
			return err
		}
	}
	kb, err := json.Marshal(nonNil(p.Knowledge))
	if err != nil {
		return err
	}
	err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := projectRow{ID: p.ID, Owner: p.Owner, Name: p.Name, Instructions: p.Instructions, Agent: p.Agent, Knowledge: string(kb),
			CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}
		if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{"name", "instructions", "agent", "knowledge", "updated_at"})}).Create(&row).Error; err != nil {
			return err
		}
		if err := tx.Where("project_id = ?", p.ID).Delete(&projectMemberRow{}).Error; err != nil {
			return err
		}
		if err := s.notifyProject(tx, p.ID); err != nil {
			return err
		}
		if len(p.Members) == 0 {
			return nil
		}
		rows := make([]projectMemberRow, len(p.Members))
		for i, m := range p.Members {
			rows[i] = projectMemberRow{ProjectID: p.ID, UserID: m.UserID, GroupID: m.GroupID, Role: m.Role, Position: i}
		}
		return tx.CreateInBatches(rows, 500).Error
	})
	if err != nil {
		return fmt.Errorf("store: put project: %w", err)
	}
	return nil
}

func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// Project implements agent.ProjectStore.
func (s *Store) Project(ctx context.Context, id string) (agent.Project, error) {
	if !textOK(id) {
		return agent.Project{}, missing("project", id)
	}
	var row projectRow
	if err := s.r.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return agent.Project{}, missing("project", id)
		}
		return agent.Project{}, fmt.Errorf("store: project: %w", err)
	}
	ps, err := s.withMembers(ctx, []projectRow{row})
	if err != nil {
		return agent.Project{}, err
	}
	return ps[0], nil
}

// Projects implements agent.ProjectStore.
func (s *Store) Projects(ctx context.Context) ([]agent.Project, error) {
	var rows []projectRow
	if err := s.r.WithContext(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: projects: %w", err)
	}
	return s.withMembers(ctx, rows)
}

// withMembers makes rows projects with their members.
func (s *Store) withMembers(ctx context.Context, rows []projectRow) ([]agent.Project, error) {
	out := make([]agent.Project, len(rows))
	by := make(map[string]int, len(rows))
	ids := make([]string, len(rows))
	for i, r := range rows {
		p := agent.Project{ID: r.ID, Owner: r.Owner, Name: r.Name, Instructions: r.Instructions, Agent: r.Agent,
			Knowledge: []string{}, Members: []agent.ProjectMember{}, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
		if err := json.Unmarshal([]byte(r.Knowledge), &p.Knowledge); err != nil || p.Knowledge == nil {
			p.Knowledge = []string{}
		}
		out[i], by[r.ID], ids[i] = p, i, r.ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var ms []projectMemberRow
	if err := s.r.WithContext(ctx).Where("project_id IN ?", ids).Order("project_id, position").Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("store: project members: %w", err)
	}
	for _, m := range ms {
		i := by[m.ProjectID]
		out[i].Members = append(out[i].Members, agent.ProjectMember{UserID: m.UserID, GroupID: m.GroupID, Role: m.Role})
	}
	return out, nil
}

// DeleteProject implements agent.ProjectStore.
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("project_id = ?", id).Delete(&projectMemberRow{}).Error; err != nil {
			return err
		}
		res := tx.Where("id = ?", id).Delete(&projectRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return missing("project", id)
		}
		return s.notifyProject(tx, id)
	})
	if err != nil {
		return fmt.Errorf("store: delete project: %w", err)
	}
	return nil
}

// projectPrefix starts the payload of a project's change on PostgreSQL:
// "project <instance> <project id>" (notify.go's channel). A project's
// rows are side tables, outside the event log that every instance
// follows, so each change tells the other instances, whose
// agent.ProjectIndex reloads the project (OnProject).
const projectPrefix = "project "

// notifyProject tells the other instances, when tx commits, that project
// id changed; on SQLite there are none.
func (s *Store) notifyProject(tx *gorm.DB, id string) error {
	if !s.postgres {
		return nil
	}
	return tx.Exec("SELECT pg_notify(?, ?)", s.channel, projectPrefix+s.instance+" "+id).Error
}

// parseProjectNotice reads a project's change notice.
func parseProjectNotice(payload string) (instance, id string, ok bool) {
	rest, ok := strings.CutPrefix(payload, projectPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, " ")
}

// OnProject sets what the listener calls, on PostgreSQL, when another
// instance changed or deleted project id, and with "" when it got its
// connection back (a change may have been missed: reload every project).
// It is called on the listener's goroutine, before the events committed
// after the change are published.
func (s *Store) OnProject(f func(id string)) { s.onProject.Store(&f) }

// ProjectConversations implements agent.ProjectStore.
func (s *Store) ProjectConversations(ctx context.Context, id string) ([]string, error) {
	var ids []string
	if err := s.r.WithContext(ctx).Raw("SELECT id FROM conversation WHERE project = ? ORDER BY id", id).Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("store: project conversations: %w", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}
