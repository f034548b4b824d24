package store

import (
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// EventRedacted is the inner type a deleted conversation's logged events
// are rewritten to: the event keeps its seq, id, date and conversation, so
// a client resuming across it sees no gap, and loses everything it said.
// Clients ignore it, as they ignore every event type they do not know.
const EventRedacted = "redacted"

// redactBatch is how many events redactConversation rewrites per query.
const redactBatch = 500

// redactConversation rewrites the logged events of conversation cid so
// that no content of it stays readable after its delete: its conversation
// events become "redacted", its created event loses the title, and its
// other agent events but turn and delete bookkeeping become "redacted".
// It returns the seqs of its events that agent_event does not hold: the
// delta log's, which the writer redacts once tx has committed.
func redactConversation(tx *gorm.DB, plain bool, cid string) ([]int64, error) {
	var side []int64
	// Its seqs in the conversation index, a batch at a time: the writer
	// wrote its pending ones with this delete (convindex.go).
	for after, more := int64(0), true; more; {
		var (
			seqs []int64
			err  error
		)
		seqs, more, err = conversationSeqs(tx, plain, cid, after, redactBatch)
		if err != nil {
			return nil, fmt.Errorf("redact conversation %s: %w", cid, err)
		}
		if len(seqs) == 0 {
			return side, nil
		}
		after = seqs[len(seqs)-1]
		rows, err := redactRows(tx, seqs)
		if err != nil {
			return nil, fmt.Errorf("redact conversation %s: %w", cid, err)
		}
		k := 0 // rows and seqs are both ascending
		for _, r := range rows {
			for ; k < len(seqs) && seqs[k] < r.Seq; k++ {
				side = append(side, seqs[k])
			}
			k++
			p, err := redactedPayload(r.Payload)
			if err != nil {
				return nil, fmt.Errorf("redact event %d: %w", r.Seq, err)
			}
			if p == r.Payload {
				continue
			}
			if _, err := rawExec(tx, "UPDATE agent_event SET payload = ? WHERE seq = ?", p, r.Seq); err != nil {
				return nil, fmt.Errorf("redact event %d: %w", r.Seq, err)
			}
		}
		side = append(side, seqs[min(k, len(seqs)):]...)
	}
	return side, nil
}

// redactRows reads the stored events of seqs.
func redactRows(tx *gorm.DB, seqs []int64) ([]eventRow, error) {
	rows, err := rawRows(tx, "SELECT seq, payload FROM agent_event WHERE seq IN ("+seqList(seqs)+") ORDER BY seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []eventRow
	for rows.Next() {
		var r eventRow
		if err := rows.Scan(&r.Seq, &r.Payload); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
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
