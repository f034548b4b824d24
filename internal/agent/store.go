package agent

import (
	"context"
)

// Store is what the runner reads and writes: conversations, their messages
// and working memory. Every write goes through Append, so each write is one
// entry of the log, applied in order and published once it holds. The
// database (package store) implements it, for stored conversations and,
// over a database of their own, for temp ones (TempStore);
// agenttest.StoreContract is what both must do.
type Store interface {
	// Append commits records in order (group-committed with concurrent
	// appends), assigns each event its seq (and a message event's Message its
	// Seq), and returns once they are durable. Before Append returns, the
	// store has handed the committed events to its publisher in seq order.
	// An event whose ID is already stored is skipped (append is idempotent).
	// A second user message with a client_id already used in the
	// conversation fails with bad_request and writes nothing of its batch.
	// It keeps no reference to the recs slice once it returns (a turn
	// reuses it), only to the records.
	Append(ctx context.Context, recs ...*Record) error

	// Conversation returns one conversation, or ErrNotFound.
	Conversation(ctx context.Context, id string) (Conversation, error)
	// Conversations returns a page, most recently updated first, and the total.
	Conversations(ctx context.Context, offset, limit int) ([]Conversation, int, error)
	// Messages returns a page of a conversation's history in seq order:
	// those with seq > q.After, then q.Offset and q.Limit. An unknown
	// conversation is ErrNotFound.
	Messages(ctx context.Context, q MessageQuery) ([]Message, error)
	// MessageByClientID returns the user message sent with clientID, or ErrNotFound.
	MessageByClientID(ctx context.Context, conversationID, clientID string) (Message, error)
	// Memory returns a conversation's working memory in order, or
	// ErrStaleMemory while a StaleMemory record's mark holds.
	Memory(ctx context.Context, conversationID string) ([]ModelMessage, error)
	// Queue returns a page of a conversation's queued sends, the next to
	// run first, each with its Position (see QueueQuery).
	Queue(ctx context.Context, q QueueQuery) ([]QueuedSend, error)
	// Pending returns the tool calls of a conversation's waiting round, in
	// order, with their decisions so far.
	Pending(ctx context.Context, conversationID string) ([]PendingCall, error)
}

// Versioned is a Store whose reads can be cached: Version moves (never
// back) with every write that may change what a read returns, before the
// Append that wrote it returns; on a database shared by several instances
// it also moves when this instance learns of another's commit (as its
// event streams do). Between two equal Versions, a read returns what it
// returned before. The database (package store) implements it.
type Versioned interface {
	Version() uint64
}

// Cluster is what the runner asks of the other instances sharing its
// database (several instances on one PostgreSQL), and of the instances that
// died: the database implements it.
type Cluster interface {
	// OrphanedTurns claims and returns the conversations marked running
	// whose turn no live process owns (the turns that died with their
	// process), and those this process started, which the caller filters by
	// the turns it still runs. A turn is claimed once, so several instances
	// recovering at the same time do not end it twice.
	OrphanedTurns(ctx context.Context) ([]Conversation, error)
	// RequestInterrupt asks the instance running the conversation's turn,
	// when that is another instance, to interrupt it; it reports whether it
	// asked.
	RequestInterrupt(ctx context.Context, conversationID string) (bool, error)
	// QueuedIdle returns the ids of the conversations that have queued
	// sends and no running turn: those whose next turn nobody started.
	QueuedIdle(ctx context.Context) ([]string, error)
	// Events reads the log (see EventQuery): Recover finds there the
	// partial answer a dead turn streamed.
	Events(ctx context.Context, q EventQuery) ([]AllEvent, error)
}

// MessageQuery selects a page of history.
type MessageQuery struct {
	ConversationID string
	After          int64 // only messages with seq > After
	Offset, Limit  int
	// All: every branch's messages; otherwise only the active path's
	// (branch.go).
	All bool
	// End, in place of Offset: the page is the latest messages before
	// this position (of those after After), as a view that shows the end
	// of a conversation pages back. 0: unused.
	End int
	// Bytes bounds the page by the messages' stored JSON: it ends before
	// the message that would take it past Bytes (it holds at least one).
	// 0: no bound. End and Bytes are read by Runner.History; the stores
	// ignore them.
	Bytes int
}

// QueueQuery selects a page of a conversation's queued sends: Offset
// skipped, at most Limit (≤ 0: no limit), and, with Bytes, ending before
// the send whose content (as stored JSON) would take the page past Bytes
// (it holds at least one). With ClientID, only the send queued with that
// client_id. Starting the next send reads one (Limit 1), not the queue.
type QueueQuery struct {
	ConversationID string
	Offset, Limit  int
	Bytes          int
	ClientID       string
}

// EventQuery selects stored events.
type EventQuery struct {
	After          int64  // only seq > After
	ConversationID string // only this conversation's events (KindConversation)
	AgentOnly      bool   // only KindAgent events
	Limit          int
	// Owner: only events of that user's conversations ("" everyone's);
	// set by ScopeEvents (access.go), never by hand.
	Owner string
	// Projects: with Owner, also the events of the conversations that
	// are in these projects now (the member's reach, access.go).
	Projects []string
}

// Publisher fans events out to live subscribers. Publish never blocks on a
// subscriber.
type Publisher interface {
	Publish(evs ...AllEvent)
}
