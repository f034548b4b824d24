package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// pendingRow is one tool call of a round that waits for decisions
// (agent.PendingCall). The rows live from the round's approval_request
// until the call's result is written, so a restart keeps the wait.
type pendingRow struct {
	ConversationID string           `gorm:"primaryKey"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	CallID         string           `gorm:"primaryKey"`
	OrderIdx       int              `gorm:"not null"`
	Name           string           `gorm:"not null"`
	Arguments      string           `gorm:"type:text;not null"`
	Needs          bool             `gorm:"not null"`
	Decided        bool             `gorm:"not null;default:false"`
	Approved       bool             `gorm:"not null;default:false"`
	Edited         string           `gorm:"type:text;not null;default:''"`
	Reason         string           `gorm:"type:text;not null;default:''"`
	// Resolved: its result is written. Kept (a late decision is a
	// conflict, not not_found) until the conversation's next round waits.
	Resolved bool `gorm:"not null;default:false"`
	// RequestedAt is when the round was parked (the approval timeout
	// counts from it); null in rows stored before it was kept.
	RequestedAt *time.Time
	// DecidedBy and DecidedAt say who decided the call and when (the
	// inbox shows them; a late decision's conflict names them); DecidedAt
	// is also set when the call is resolved undecided (interrupted).
	DecidedBy string `gorm:"not null;default:''"`
	DecidedAt *time.Time
}

func (pendingRow) TableName() string { return "pending_call" }

// Pending returns the tool calls of a conversation's waiting round, in order.
func (s *Store) Pending(ctx context.Context, conversationID string) ([]agent.PendingCall, error) {
	var rows []pendingRow
	if err := s.r.WithContext(ctx).Where("conversation_id = ? AND resolved = ?", conversationID, false).Order("order_idx").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: pending calls: %w", err)
	}
	out := make([]agent.PendingCall, len(rows))
	for i, r := range rows {
		out[i] = agent.PendingCall{CallID: r.CallID, Name: r.Name, Arguments: r.Arguments, Needs: r.Needs,
			Decided: r.Decided, Approved: r.Approved, Edited: r.Edited, Reason: r.Reason}
		if r.RequestedAt != nil {
			out[i].Requested = r.RequestedAt.UTC()
		}
	}
	return out, nil
}

// waitingIDs decodes the conversation row's waiting column.
func waitingIDs(s string) []string {
	if s == "" {
		return nil
	}
	var ids []string
	_ = json.Unmarshal([]byte(s), &ids)
	return ids
}

func encodeWaiting(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// applyApproval writes rec's approval change (see agent.Record) in its
// transaction; the write lock makes the read-then-write safe.
func applyApproval(tx *gorm.DB, rec *agent.Record, owner string) error {
	if a := rec.Event.Agent; a != nil && a.Type == agent.AgentWaiting {
		w, err := waitingOf(tx, rec.Event.ConversationID)
		if err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return agent.Errorf(agent.CodeNotFound, "conversation %q not found", rec.Event.ConversationID)
			}
			return fmt.Errorf("waiting calls of %s: %w", rec.Event.ConversationID, err)
		}
		a.Waiting = append([]string{}, waitingIDs(w)...)
		return nil
	}
	if rec.Wait == nil && rec.Decide == nil && rec.Resolve == "" && !rec.EndWait {
		return nil
	}
	cid := rec.Event.ConversationID
	w, err := waitingOf(tx, cid)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
		}
		return fmt.Errorf("approval of %s: %w", cid, err)
	}
	waiting := waitingIDs(w)
	if rec.EndWait && len(waiting) == 0 {
		return agent.Errorf(agent.CodeConflict, "the turn of conversation %s no longer waits", cid)
	}
	if rec.Wait != nil {
		waiting = nil
		rows := make([]pendingRow, len(rec.Wait))
		for i, p := range rec.Wait {
			rows[i] = pendingRow{ConversationID: cid, CallID: p.CallID, OrderIdx: i, Name: p.Name, Arguments: p.Arguments, Needs: p.Needs}
			if !p.Requested.IsZero() {
				at := p.Requested.UTC()
				rows[i].RequestedAt = &at
			}
			if p.Needs {
				waiting = append(waiting, p.CallID)
			}
		}
		if err := tx.Where("conversation_id = ?", cid).Delete(&pendingRow{}).Error; err != nil {
			return fmt.Errorf("drop resolved calls of %s: %w", cid, err)
		}
		if err := tx.Create(&rows).Error; err != nil {
			return fmt.Errorf("store waiting calls of %s: %w", cid, err)
		}
	}
	if d := rec.Decide; d != nil {
		var p pendingRow
		if err := tx.Take(&p, "conversation_id = ? AND call_id = ?", cid, d.CallID).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return agent.Errorf(agent.CodeNotFound, "no tool call %s waits in conversation %s", d.CallID, cid)
			}
			return fmt.Errorf("decide %s: %w", d.CallID, err)
		}
		switch {
		case !p.Needs:
			return agent.Errorf(agent.CodeConflict, "tool call %s needs no decision", d.CallID)
		case p.Decided:
			return agent.Errorf(agent.CodeConflict, "tool call %s was already decided (%s)%s; nothing changed", d.CallID, decisionOf(p.Approved), agent.AnsweredBy(p.DecidedBy, timeOf(p.DecidedAt)))
		case p.Resolved:
			return agent.Errorf(agent.CodeConflict, "tool call %s no longer waits (its turn ended)%s; nothing changed", d.CallID, agent.AnsweredBy("", timeOf(p.DecidedAt)))
		}
		at := rec.Event.Date.UTC()
		if err := tx.Model(&pendingRow{}).Where("conversation_id = ? AND call_id = ?", cid, d.CallID).
			UpdateColumns(map[string]any{"decided": true, "approved": d.Approve, "edited": d.Arguments, "reason": d.Reason, "decided_by": d.By, "decided_at": at}).Error; err != nil {
			return fmt.Errorf("decide %s: %w", d.CallID, err)
		}
		waiting = slices.DeleteFunc(waiting, func(id string) bool { return id == d.CallID })
		if len(waiting) == 0 {
			d.Last = true
			// The instance that resumes the turn owns it from now on.
			if err := updateConversation(tx, cid, map[string]any{"turn_owner": owner}); err != nil {
				return err
			}
		}
	}
	if rec.EndWait {
		waiting = nil
	}
	if id := rec.Resolve; id != "" {
		if err := tx.Model(&pendingRow{}).Where("conversation_id = ? AND call_id = ?", cid, id).UpdateColumn("resolved", true).Error; err != nil {
			return fmt.Errorf("resolve %s: %w", id, err)
		}
		// An undecided call resolved (interrupted) is dated for the inbox.
		if err := tx.Model(&pendingRow{}).Where("conversation_id = ? AND call_id = ? AND decided_at IS NULL", cid, id).
			UpdateColumn("decided_at", rec.Event.Date.UTC()).Error; err != nil {
			return fmt.Errorf("resolve %s: %w", id, err)
		}
	}
	return updateConversation(tx, cid, map[string]any{"waiting": encodeWaiting(waiting)})
}

// decisionOf names a decision.
func decisionOf(approved bool) string {
	if approved {
		return agent.DecisionApprove
	}
	return agent.DecisionDeny
}

// timeOf is *t, or the zero time.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// HumanLoad counts what waits for people, for the metrics: tool calls
// waiting for an approval and sends queued behind a running turn, over
// every conversation (all instances' on PostgreSQL).
func (s *Store) HumanLoad(ctx context.Context) (waiting, queued int, err error) {
	var lists []string
	if err := s.r.WithContext(ctx).Model(&conversationRow{}).Where("waiting <> ''").Pluck("waiting", &lists).Error; err != nil {
		return 0, 0, fmt.Errorf("store: waiting calls: %w", err)
	}
	for _, l := range lists {
		waiting += len(waitingIDs(l))
	}
	var n int64
	if err := s.r.WithContext(ctx).Model(&queueRow{}).Count(&n).Error; err != nil {
		return 0, 0, fmt.Errorf("store: queued sends: %w", err)
	}
	return waiting, int(n), nil
}
