package store

import (
	"database/sql"
	"encoding/json"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
)

// EventRedacted is the inner type a deleted conversation's logged events
// are rewritten to: the event keeps its seq, id, date and conversation, so
// a client resuming across it sees no gap, and loses everything it said.
// Clients ignore it, as they ignore every event type they do not know.
const EventRedacted = "redacted"

// redactBatch is how many events redactConversation rewrites per query.
const redactBatch = eventlog.RedactBatch

// redactConversation rewrites the logged events of conversation cid so
// that no content of it stays readable after its delete: its conversation
// events become "redacted", its created event loses the title, and its
// other agent events but turn and delete bookkeeping become "redacted"
// (redactedPayload). The walk of its events is the engine's
// (eventlog.Redact), by its seqs in the conversation index: the writer
// wrote its pending ones with this delete (convindex.go). It returns the
// seqs of its events that agent_event does not hold: the delta log's,
// which the writer redacts once tx has committed.
func redactConversation(tx *gorm.DB, plain bool, cid string) ([]int64, error) {
	return eventlog.Redact(eventlog.Redaction{
		Table: &eventTable,
		What:  "conversation " + cid,
		Seqs: func(after int64, want int) ([]int64, bool, error) {
			return conversationSeqs(tx, plain, cid, after, want)
		},
		Query: func(q string, args ...any) (*sql.Rows, error) { return rawRows(tx, q, args...) },
		Exec: func(q string, args ...any) error {
			_, err := rawExec(tx, q, args...)
			return err
		},
		Rewrite: redactedPayload,
	})
}

// redactedPayload is the payload of a stored event with its content gone.
func redactedPayload(payload string) (string, error) {
	var w struct {
		Type           string          `json:"type"`
		Seq            int64           `json:"seq"`
		ID             string          `json:"id"`
		Date           json.RawMessage `json:"date"`
		ConversationID string          `json:"conversation_id,omitempty"`
		Event          struct {
			Type           string `json:"type"`
			ConversationID string `json:"conversation_id,omitempty"`
		} `json:"event"`
	}
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return "", err
	}
	if w.Type == agent.KindAgent {
		switch w.Event.Type {
		case agent.AgentDeleted, agent.AgentTurnStarted, agent.AgentTurnEnded, EventRedacted:
			return payload, nil
		case agent.AgentCreated: // keeps its type: the deleted event that follows needs no guessing
		default:
			w.Event.Type = EventRedacted
		}
	} else {
		if w.Event.Type == EventRedacted {
			return payload, nil
		}
		w.Event.Type, w.Event.ConversationID = EventRedacted, ""
	}
	b, err := json.Marshal(w)
	return string(b), err
}
