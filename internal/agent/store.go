package agent

import (
	"context"
	"time"
)

// Store keeps conversations, their messages and working memory, and the
// event log. Every write goes through Append, so each write is one entry of
// the log, committed in seq order and published only once durable.
type Store interface {
	// Append commits records in order (group-committed with concurrent
	// appends), assigns each event its seq (and a message event's Message its
	// Seq), and returns once they are durable. Before Append returns, the
	// store has handed the committed events to its publisher in seq order.
	// An event whose ID is already stored is skipped (append is idempotent).
	Append(ctx context.Context, recs ...*Record) error

	// Conversation returns one conversation, or ErrNotFound.
	Conversation(ctx context.Context, id string) (Conversation, error)
	// Conversations returns a page, most recently updated first, and the total.
	Conversations(ctx context.Context, offset, limit int) ([]Conversation, int, error)
	// OrphanedTurns claims and returns the conversations marked running
	// whose turn no live process owns (the turns that died with their
	// process), and those this process started, which the caller filters by
	// the turns it still runs. A turn is claimed once, so several instances
	// recovering at the same time do not end it twice.
	OrphanedTurns(ctx context.Context) ([]Conversation, error)

	// Messages returns a page of a conversation's history in seq order.
	Messages(ctx context.Context, q MessageQuery) ([]Message, error)
	// MessageByClientID returns the user message sent with clientID, or ErrNotFound.
	MessageByClientID(ctx context.Context, conversationID, clientID string) (Message, error)
	// Memory returns a conversation's working memory in order.
	Memory(ctx context.Context, conversationID string) ([]ModelMessage, error)

	// Events returns stored events with seq > q.After in seq order.
	Events(ctx context.Context, q EventQuery) ([]AllEvent, error)
	// EventSeq returns the seq of the event with that id, or ErrNotFound.
	EventSeq(ctx context.Context, id string) (int64, error)
	// Bounds returns the seq through which events were pruned (a cursor below
	// it has lost events) and the highest committed seq.
	Bounds(ctx context.Context) (pruned, head int64, err error)
	// Prune deletes events created before t and returns how many.
	Prune(ctx context.Context, before time.Time) (int64, error)

	// RequestInterrupt asks the instance running the conversation's turn,
	// when that is another instance, to interrupt it; it reports whether it
	// asked.
	RequestInterrupt(ctx context.Context, conversationID string) (bool, error)

	// Epoch identifies this database: a random id made when it was created.
	Epoch() string
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
}

// MessageQuery selects a page of history.
type MessageQuery struct {
	ConversationID string
	After          int64 // only messages with seq > After
	Offset, Limit  int
}

// EventQuery selects stored events.
type EventQuery struct {
	After          int64  // only seq > After
	ConversationID string // only this conversation's events (KindConversation)
	AgentOnly      bool   // only KindAgent events
	Limit          int
}

// Publisher fans events out to live subscribers. Publish never blocks on a
// subscriber.
type Publisher interface {
	Publish(evs ...AllEvent)
}
