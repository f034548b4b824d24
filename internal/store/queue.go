package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// queueRow is one queued send (agent.QueuedSend): stored at once, removed
// when it starts or is cancelled. Pos orders a conversation's queue; a send
// that goes first takes a Pos below the others'.
type queueRow struct {
	MessageID      string           `gorm:"primaryKey"`
	ConversationID string           `gorm:"not null;index:idx_queue_order,priority:1;uniqueIndex:idx_queue_client,priority:1"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	Pos            int64            `gorm:"not null;index:idx_queue_order,priority:2"`
	ClientID       *string          `gorm:"uniqueIndex:idx_queue_client,priority:2"`
	Date           time.Time        `gorm:"not null"`
	Content        string           `gorm:"type:text;not null"` // wire JSON of []agent.Content
}

func (queueRow) TableName() string { return "queued_send" }

// Queue returns a conversation's queued sends, the next to run first.
func (s *Store) Queue(ctx context.Context, conversationID string) ([]agent.QueuedSend, error) {
	var rows []queueRow
	if err := s.r.WithContext(ctx).Where("conversation_id = ?", conversationID).
		Order("pos").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: queue: %w", err)
	}
	out := make([]agent.QueuedSend, len(rows))
	for i, r := range rows {
		q := agent.QueuedSend{MessageID: r.MessageID, ConversationID: r.ConversationID, Date: r.Date.UTC()}
		if r.ClientID != nil {
			q.ClientID = *r.ClientID
		}
		if err := json.Unmarshal([]byte(r.Content), &q.Content); err != nil {
			return nil, fmt.Errorf("store: queue: message %s: %w", r.MessageID, err)
		}
		out[i] = q
	}
	return out, nil
}

// QueuedIdle returns the conversations with queued sends and no running
// turn.
func (s *Store) QueuedIdle(ctx context.Context) ([]string, error) {
	var ids []string
	if err := s.r.WithContext(ctx).Model(&conversationRow{}).
		Where("running = ? AND queued > 0", false).Order("updated_at").Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("store: queued conversations: %w", err)
	}
	return ids, nil
}

// applyQueue writes rec's queue change (see agent.Record) before its event
// is encoded: an enqueued send's event gets its position here. Every
// appender holds the write lock (one writer on SQLite, the seq lock on
// PostgreSQL), so the reads below see what the change applies to.
func applyQueue(tx *gorm.DB, rec *agent.Record) error {
	cid := rec.Event.ConversationID
	if q := rec.Enqueue; q != nil {
		var agg struct {
			N, Bytes int64
			Lo, Hi   *int64
		}
		if err := tx.Model(&queueRow{}).Where("conversation_id = ?", cid).
			Select("COUNT(*) AS n, COALESCE(SUM(LENGTH(content)), 0) AS bytes, MIN(pos) AS lo, MAX(pos) AS hi").Scan(&agg).Error; err != nil {
			return fmt.Errorf("queue of %s: %w", cid, err)
		}
		pos, position := int64(1), int(agg.N)+1
		switch {
		case q.Front:
			position = 1
			if agg.Lo != nil {
				pos = *agg.Lo - 1
			}
		case agg.Hi != nil:
			pos = *agg.Hi + 1
		}
		content, err := json.Marshal(q.Content)
		if err != nil {
			return agent.Errorf(agent.CodeBadRequest, "queued message %s: %v", q.MessageID, err)
		}
		// LENGTH counts characters: content is JSON, ASCII but for the
		// text it carries, so this is about its bytes.
		if err := agent.CheckQueueRoom(cid, int(agg.N), int(agg.Bytes)+len(content)); err != nil {
			return err
		}
		date := q.Date
		if date.IsZero() {
			date = rec.Event.Date
		}
		row := queueRow{MessageID: q.MessageID, ConversationID: cid, Pos: pos, Date: date.UTC().Truncate(time.Microsecond), Content: string(content)}
		if q.ClientID != "" {
			id := q.ClientID
			row.ClientID = &id
		}
		if err := tx.Create(&row).Error; err != nil {
			switch {
			case errors.Is(err, gorm.ErrForeignKeyViolated):
				return agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
			case errors.Is(err, gorm.ErrDuplicatedKey):
				return agent.Errorf(agent.CodeBadRequest, "queued message %s: client_id %q is already queued in conversation %s (or the message id is)", q.MessageID, q.ClientID, cid)
			}
			return fmt.Errorf("queue message %s: %w", q.MessageID, err)
		}
		if err := updateConversation(tx, cid, map[string]any{"queued": gorm.Expr("queued + 1")}); err != nil {
			return err
		}
		if e := rec.Event.Event; e != nil {
			e.Position = position
		}
	}
	if id := rec.Dequeue; id != "" {
		res := tx.Where("conversation_id = ? AND message_id = ?", cid, id).Delete(&queueRow{})
		if res.Error != nil {
			return fmt.Errorf("dequeue message %s: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			var n int64
			if err := tx.Model(&messageRow{}).Where("id = ? AND conversation_id = ?", id, cid).Count(&n).Error; err != nil {
				return fmt.Errorf("dequeue message %s: %w", id, err)
			}
			if n > 0 {
				return agent.Errorf(agent.CodeConflict, "queued message %s has already started", id)
			}
			return agent.Errorf(agent.CodeNotFound, "no queued message %s in conversation %s", id, cid)
		}
		if err := updateConversation(tx, cid, map[string]any{"queued": gorm.Expr("queued - 1")}); err != nil {
			return err
		}
	}
	return nil
}
