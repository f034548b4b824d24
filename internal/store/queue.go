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

// Queue returns a page of a conversation's queued sends, the next to run
// first (see agent.QueueQuery). Rows are read one at a time, so a page
// bounded in bytes stops reading where it ends.
func (s *Store) Queue(ctx context.Context, q agent.QueueQuery) ([]agent.QueuedSend, error) {
	if !textOK(q.ConversationID) || !textOK(q.ClientID) {
		return nil, nil // nothing is queued under such an id
	}
	db := s.r.WithContext(ctx).Model(&queueRow{}).Where("conversation_id = ?", q.ConversationID)
	if q.ClientID != "" {
		db = db.Where("client_id = ?", q.ClientID)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
	}
	rows, err := db.Select("message_id, pos, client_id, date, content").Order("pos").
		Offset(max(q.Offset, 0)).Limit(limit).Rows()
	if err != nil {
		return nil, fmt.Errorf("store: queue: %w", err)
	}
	defer rows.Close()
	var out []agent.QueuedSend
	var pos []int64
	total := 0
	for rows.Next() {
		var r queueRow
		if err := rows.Scan(&r.MessageID, &r.Pos, &r.ClientID, &r.Date, &r.Content); err != nil {
			return nil, fmt.Errorf("store: queue: %w", err)
		}
		if q.Bytes > 0 && len(out) > 0 && total+len(r.Content) > q.Bytes {
			break
		}
		total += len(r.Content)
		qs := agent.QueuedSend{MessageID: r.MessageID, ConversationID: q.ConversationID, Date: r.Date.UTC(), Position: max(q.Offset, 0) + len(out) + 1}
		if r.ClientID != nil {
			qs.ClientID = *r.ClientID
		}
		if err := json.Unmarshal([]byte(r.Content), &qs.Content); err != nil {
			return nil, fmt.Errorf("store: queue: message %s: %w", r.MessageID, err)
		}
		out = append(out, qs)
		pos = append(pos, r.Pos)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: queue: %w", err)
	}
	if q.ClientID != "" && len(out) > 0 {
		// Its place is counted, not found by reading the sends before it.
		var n int64
		if err := s.r.WithContext(ctx).Model(&queueRow{}).Where("conversation_id = ? AND pos < ?", q.ConversationID, pos[0]).
			Count(&n).Error; err != nil {
			return nil, fmt.Errorf("store: queue: %w", err)
		}
		out[0].Position = int(n) + 1
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
