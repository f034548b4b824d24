package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// elicitRow is one tool's request for the user's input (agent.Elicitation)
// with its answer once given. The rows of a conversation live until its
// next round of tool calls is stored: a call run again after a restart
// gets the answers back from them.
type elicitRow struct {
	ConversationID string           `gorm:"primaryKey"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	ID             string           `gorm:"primaryKey"`
	CallID         string           `gorm:"not null"`
	Idx            int              `gorm:"not null"`
	Server         string           `gorm:"not null"`
	Mode           string           `gorm:"not null"`
	Message        string           `gorm:"type:text;not null"`
	Schema         string           `gorm:"type:text;not null;default:''"`
	URL            string           `gorm:"type:text;not null;default:''"`
	ElicitationID  string           `gorm:"not null;default:''"`
	RequestedAt    time.Time        `gorm:"not null"`
	Answered       bool             `gorm:"not null;default:false"`
	Action         string           `gorm:"not null;default:''"`
	Content        string           `gorm:"type:text;not null;default:''"`
	// AnsweredBy and AnsweredAt: who answered and when (agent.Elicitation).
	AnsweredBy string `gorm:"not null;default:''"`
	AnsweredAt *time.Time
}

func (elicitRow) TableName() string { return "elicitation" }

var _ agent.ElicitStore = (*Store)(nil)

// Elicitations implements agent.ElicitStore.
func (s *Store) Elicitations(ctx context.Context, conversationID string) ([]agent.Elicitation, error) {
	var rows []elicitRow
	if err := s.r.WithContext(ctx).Where("conversation_id = ?", conversationID).Order("call_id, idx").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: elicitations: %w", err)
	}
	out := make([]agent.Elicitation, len(rows))
	for i, r := range rows {
		out[i] = agent.Elicitation{ID: r.ID, ConversationID: r.ConversationID, CallID: r.CallID, Index: r.Idx,
			ElicitRequest: agent.ElicitRequest{Server: r.Server, Mode: r.Mode, Message: r.Message, URL: r.URL, ElicitationID: r.ElicitationID},
			Requested:     r.RequestedAt.UTC(), Answered: r.Answered, Action: r.Action, AnsweredBy: r.AnsweredBy, AnsweredAt: timeOf(r.AnsweredAt)}
		if r.Schema != "" {
			out[i].Schema = []byte(r.Schema)
		}
		if r.Content != "" {
			out[i].Content = []byte(r.Content)
		}
	}
	return out, nil
}

// applyElicit writes rec's elicitation change (agent.Record.Elicit) in its
// transaction, after applyApproval: a new round (rec.Wait) drops the last
// round's requests.
func applyElicit(tx *gorm.DB, rec *agent.Record) error {
	cid := rec.Event.ConversationID
	if rec.Wait != nil {
		if err := tx.Where("conversation_id = ?", cid).Delete(&elicitRow{}).Error; err != nil {
			return fmt.Errorf("drop elicitations of %s: %w", cid, err)
		}
	}
	ch := rec.Elicit
	if ch == nil {
		return nil
	}
	w, err := waitingOf(tx, cid)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return agent.Errorf(agent.CodeNotFound, "conversation %q not found", cid)
		}
		return fmt.Errorf("elicitation of %s: %w", cid, err)
	}
	waiting := waitingIDs(w)
	cols := map[string]any{}
	if e := ch.Ask; e != nil {
		row := elicitRow{ConversationID: cid, ID: e.ID, CallID: e.CallID, Idx: e.Index, Server: e.Server, Mode: e.Mode,
			Message: e.Message, Schema: string(e.Schema), URL: e.URL, ElicitationID: e.ElicitationID, RequestedAt: e.Requested.UTC()}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("store elicitation of %s: %w", cid, err)
		}
		waiting = append(waiting, e.ID)
	}
	if a := ch.Answer; a != nil {
		var row elicitRow
		if err := tx.Take(&row, "conversation_id = ? AND id = ?", cid, a.RequestID).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return agent.Errorf(agent.CodeNotFound, "no elicitation %s waits in conversation %s", a.RequestID, cid)
			}
			return fmt.Errorf("answer %s: %w", a.RequestID, err)
		}
		if row.Answered {
			return agent.Errorf(agent.CodeConflict, "elicitation %s was already answered (%s)%s; nothing changed", a.RequestID, row.Action, agent.AnsweredBy(row.AnsweredBy, timeOf(row.AnsweredAt)))
		}
		if !slices.Contains(waiting, a.RequestID) {
			return agent.Errorf(agent.CodeConflict, "elicitation %s no longer waits; nothing changed", a.RequestID)
		}
		if err := tx.Model(&elicitRow{}).Where("conversation_id = ? AND id = ?", cid, a.RequestID).
			UpdateColumns(map[string]any{"answered": true, "action": a.Action, "content": string(a.Content), "answered_by": a.By, "answered_at": rec.Event.Date.UTC()}).Error; err != nil {
			return fmt.Errorf("answer %s: %w", a.RequestID, err)
		}
		waiting = slices.DeleteFunc(waiting, func(id string) bool { return id == a.RequestID })
		a.Last = len(waiting) == 0
		// The owner stays: the instance running the call gets the answer;
		// if it died, whoever resumes finds the turn orphaned (Runner.Elicit).
	}
	cols["waiting"] = encodeWaiting(waiting)
	return updateConversation(tx, cid, cols)
}
