package agent

import "time"

// TurnChange is what a Record does to its conversation's turn state.
type TurnChange int

// Turn changes.
const (
	TurnNone  TurnChange = iota
	TurnStart            // mark running; turn_seq = this record's seq
	TurnEnd              // mark idle
)

// Record is one entry for the event log with the rows that belong to it,
// written in the same transaction:
//   - a KindAgent created event inserts Conversation; renamed updates the
//     title; updated sets the settings it carries (settings.go); deleted deletes the conversation with its messages and memory;
//   - a KindConversation message event inserts its Message (seq = the
//     event's seq) and bumps the conversation's updated_at and message_count;
//   - Memory is appended to the conversation's working memory, or, with
//     ReplaceMemory, becomes the whole working memory (a compaction, or
//     the first memory a turn writes after a branch switch);
//   - StaleMemory marks working memory stale: it no longer follows the
//     active path (the head moved to another branch). Store.Memory then
//     fails with ErrStaleMemory until a ReplaceMemory record writes it
//     anew; Memory appended meanwhile is kept but never read (branch.go);
//   - Context, when set, becomes the conversation's context size;
//   - Turn changes the conversation's turn state;
//   - Enqueue stores a queued send (its queued event's Position is set by
//     the store); Dequeue removes one (a queued send that starts, or is
//     cancelled): not_found when it never was queued, conflict when it is
//     gone (started or cancelled). A record with TurnStart (Dequeue or
//     not) fails with busy when a turn runs already (slot.go).
type Record struct {
	Event         AllEvent
	Conversation  *Conversation
	Memory        []ModelMessage
	ReplaceMemory bool
	StaleMemory   bool
	Context       *ContextSize
	Turn          TurnChange
	// Source, on a created record, names what the conversation was
	// imported from (see Import); unique among stored conversations.
	Source string
	// AutoTitle marks a renamed event agentik wrote (from the first line,
	// or by the model), not a user: it applies only while the title is not
	// a user's, else the append fails with ErrUserTitled and writes nothing
	// of its batch. Any other renamed or updated title is a user's, and so
	// is a created one when Conversation.UserTitled says so.
	AutoTitle bool
	Enqueue   *QueuedSend
	Dequeue   string // message id of a queued send
	// Approvals (see approval.go): Wait stores a round's tool calls that
	// wait; Decide records a decision (not_found for an unknown call,
	// conflict for one decided or not waiting; the store sets Decide.Last
	// when it was the last undecided one, and then makes this instance the
	// turn's owner); Resolve drops a stored call once its result is
	// written; EndWait fails with conflict unless the turn still waits.
	// A record whose event is a waiting agent event gets the
	// conversation's waiting call ids as of its place in the batch.
	Wait    []PendingCall
	Decide  *Decision
	Resolve string
	EndWait bool
	// Elicit stores a tool's request for input or its answer (elicit.go),
	// applied after the approval change.
	Elicit *ElicitChange
	// Head, when set, moves the conversation's head (its active leaf;
	// "" = before the first message) before the record's message is
	// written; the store refuses it with busy while a turn runs, unless
	// the record starts one (branch.go). A message without a ParentID
	// follows the head, and becomes the head.
	Head *string
	// Quiet, in a temp conversation (TempStore), applies the record without
	// publishing its event: the messages a stateless request seeds its
	// conversation with, which no subscriber of that conversation can
	// have waited for (it did not exist) and which the all stream does
	// not carry (a request's history would flood its subscribers).
	// Stored conversations ignore it: their every event is in the log.
	Quiet bool
}

func (r *Runner) event(convID string, ev Event) AllEvent {
	return AllEvent{Kind: KindConversation, ID: NewID(), Date: r.now(), ConversationID: convID, Event: &ev}
}

func (r *Runner) agentEvent(ev AgentEvent) AllEvent {
	return AllEvent{Kind: KindAgent, ID: NewID(), Date: r.now(), ConversationID: ev.ConversationID, Agent: &ev}
}

// messageRecord makes the record that persists m with its message event.
func (r *Runner) messageRecord(m Message, mem ...ModelMessage) *Record {
	if m.ID == "" {
		m.ID = NewID()
	}
	if m.Date.IsZero() {
		m.Date = r.now()
	}
	if m.Type == MessageUser {
		for i := range mem {
			if mem[i].Role == RoleUser && mem[i].MessageID == "" {
				mem[i].MessageID = m.ID
			}
		}
	}
	return &Record{Event: r.event(m.ConversationID, Event{Type: EventMessage, Message: &m}), Memory: mem}
}

// ToolServerEvent is the live agent event that reports a tool server's
// state. It is never stored, so it has no seq.
func ToolServerEvent(s ToolServer, now time.Time) AllEvent {
	return AllEvent{Kind: KindAgent, ID: NewID(), Date: now, Agent: &AgentEvent{Type: AgentToolServer, Server: &s}}
}

// failRecords are the records that end a turn with an error: the error
// message (audit only), error and end events.
func (r *Runner) failRecords(convID string, e *Error, usage *Usage) []*Record {
	m := Message{Type: MessageError, ConversationID: convID, Error: e.Message, Code: e.Code}
	return append([]*Record{
		r.messageRecord(m),
		{Event: r.event(convID, Event{Type: EventError, Error: e.Message, Code: e.Code})},
	}, r.endRecords(convID, usage)...)
}

// endRecords end a turn: turn_ended on the agent stream, which marks the
// conversation idle, then the turn's end event, always its last.
func (r *Runner) endRecords(convID string, usage *Usage) []*Record {
	return []*Record{
		{Event: r.agentEvent(AgentEvent{Type: AgentTurnEnded, ConversationID: convID}), Turn: TurnEnd},
		{Event: r.event(convID, Event{Type: EventEnd, Usage: usage})},
	}
}
