package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.FeedbackStore = (*Store)(nil)

// feedbackRow is one person's rating of one answer (agent.Feedback): its
// key is (message, user), so a new rating replaces the old; it goes with
// its message (and so with its conversation). Model and agent are the
// answer's, copied so that the counts read this table alone.
type feedbackRow struct {
	MessageID      string      `gorm:"primaryKey"`
	Message        *messageRow `gorm:"foreignKey:MessageID;constraint:OnDelete:CASCADE"`
	UserID         string      `gorm:"primaryKey"`
	ConversationID string      `gorm:"not null;index"`
	Up             bool        `gorm:"not null"`
	Comment        string      `gorm:"type:text;not null;default:''"`
	Model          string      `gorm:"not null;default:''"`
	Agent          string      `gorm:"not null;default:''"`
	UpdatedAt      int64       `gorm:"not null;index;autoUpdateTime:false"` // unix nanoseconds
}

func (feedbackRow) TableName() string { return "feedback" }

// feedbackTables are init's migration of feedback.
var feedbackTables = []any{&feedbackRow{}}

func (r feedbackRow) feedback() agent.Feedback {
	f := agent.Feedback{ConversationID: r.ConversationID, MessageID: r.MessageID, UserID: r.UserID, Rating: agent.RatingDown,
		Comment: r.Comment, Model: r.Model, Agent: r.Agent, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()}
	if r.Up {
		f.Rating = agent.RatingUp
	}
	return f
}

// Answer implements agent.FeedbackStore.
func (s *Store) Answer(ctx context.Context, conversationID, id string) (agent.Message, error) {
	if !textOK(conversationID) || !textOK(id) {
		return agent.Message{}, fmt.Errorf("store: answer: %w", missing("message", id))
	}
	var row messageRow
	err := s.r.WithContext(ctx).Take(&row, "id = ? AND conversation_id = ? AND type = ?", id, conversationID, agent.MessageAssistant).Error
	if err != nil {
		return agent.Message{}, fmt.Errorf("store: answer: %w", notFound(err, "answer", id))
	}
	var m agent.Message
	if err := json.Unmarshal([]byte(row.Payload), &m); err != nil {
		return agent.Message{}, fmt.Errorf("store: answer %s: decode: %w", id, err)
	}
	return m, nil
}

// PutFeedback implements agent.FeedbackStore.
func (s *Store) PutFeedback(ctx context.Context, f agent.Feedback) error {
	row := feedbackRow{MessageID: f.MessageID, UserID: f.UserID, ConversationID: f.ConversationID, Up: f.Rating == agent.RatingUp,
		Comment: f.Comment, Model: f.Model, Agent: f.Agent, UpdatedAt: f.UpdatedAt.UnixNano()}
	err := s.w.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "message_id"}, {Name: "user_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"up", "comment", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("store: put feedback: %w", notFound(err, "answer", f.MessageID))
	}
	return nil
}

// DeleteFeedback implements agent.FeedbackStore.
func (s *Store) DeleteFeedback(ctx context.Context, messageID, userID string) error {
	if err := s.w.WithContext(ctx).Where("message_id = ? AND user_id = ?", messageID, userID).Delete(&feedbackRow{}).Error; err != nil {
		return fmt.Errorf("store: delete feedback: %w", err)
	}
	return nil
}

// Feedback implements agent.FeedbackStore.
func (s *Store) Feedback(ctx context.Context, q agent.FeedbackQuery) ([]agent.Feedback, error) {
	db := s.r.WithContext(ctx)
	if q.ConversationID != "" {
		db = db.Where("conversation_id = ?", q.ConversationID)
	}
	if q.UserID != "" {
		db = db.Where("user_id = ?", q.UserID)
	}
	var rows []feedbackRow
	if err := db.Order("updated_at DESC, message_id, user_id").Limit(max(q.Limit, 1)).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: feedback: %w", err)
	}
	out := make([]agent.Feedback, len(rows))
	for i, r := range rows {
		out[i] = r.feedback()
	}
	return out, nil
}

// FeedbackCounts implements agent.FeedbackStore.
func (s *Store) FeedbackCounts(ctx context.Context) ([]agent.FeedbackCount, error) {
	var out []agent.FeedbackCount
	err := s.r.WithContext(ctx).Model(&feedbackRow{}).
		Select("model, agent, SUM(CASE WHEN up THEN 1 ELSE 0 END) AS up, SUM(CASE WHEN up THEN 0 ELSE 1 END) AS down").
		Group("model, agent").Order("model, agent").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("store: feedback counts: %w", err)
	}
	return out, nil
}
