package store

import (
	"time"
)

// The tables of DESIGN.md §4. Payload columns hold the wire JSON of the
// agent type, so a row decodes with the same code that reads the wire and an
// unknown type survives a round trip.

// conversationRow is one conversation and its turn state.
type conversationRow struct {
	ID           string    `gorm:"primaryKey;index:idx_conversation_recent,priority:2;index:idx_conversation_list,priority:4,sort:desc;index:idx_conversation_owner_list,priority:5,sort:desc"`
	Title        string    `gorm:"not null"`
	CreatedAt    time.Time `gorm:"not null"`
	UpdatedAt    time.Time `gorm:"not null;index:idx_conversation_recent,priority:1;index:idx_conversation_owner_recent,priority:2;index:idx_conversation_list,priority:3,sort:desc;index:idx_conversation_owner_list,priority:4,sort:desc"`
	MessageCount int       `gorm:"not null;default:0"`
	Running      bool      `gorm:"not null;default:false;index"`
	RunningSince *time.Time
	TurnSeq      int64 `gorm:"not null;default:0"`
	// TurnOwner is the instance running the turn (Store.instance); a turn
	// whose owner is gone is orphaned.
	TurnOwner string `gorm:"not null;default:''"`
	// Source is what the conversation was imported from (agent.Record's
	// Source); nil for one made here.
	Source *string `gorm:"uniqueIndex"`
	// ContextTokens and ContextWindow are agent.Conversation.Context; 0
	// before the first model call.
	ContextTokens int `gorm:"not null;default:0"`
	ContextWindow int `gorm:"not null;default:0"`
	ContextBytes  int `gorm:"not null;default:0"` // the estimate's raw bytes of that prompt: its calibration
	// The conversation's settings (agent.Settings); Params is its JSON.
	Model        string `gorm:"not null;default:''"`
	SystemPrompt string `gorm:"not null;default:''"`
	Params       string `gorm:"not null;default:''"`
	// Tools is the conversation's tool choice as JSON ("" for none:
	// every tool; "[]" for no tool).
	Tools      string `gorm:"not null;default:''"`
	UserTitled bool   `gorm:"not null;default:false"`
	Queued     int    `gorm:"not null;default:0"`            // rows of queued_send
	Waiting    string `gorm:"type:text;not null;default:''"` // JSON call ids waiting for a decision (see approval.go)
	// Head is the active path's leaf message ("" before the first);
	// NULL in a database from before branches: its last message (branch.go).
	Head *string
	// MemoryStale: working memory does not follow the active path
	// (agent.Record.StaleMemory); Memory fails until it is replaced.
	MemoryStale bool `gorm:"not null;default:false"`
	// Agent is the slug of the conversation's agent; '' in a database
	// from before agents: the default agent.
	Agent string `gorm:"not null;default:''"`
	// ParentID and ParentCall link a delegated child to the tool call of
	// its parent (agent.Parent); '' for a conversation a person started.
	ParentID   string `gorm:"not null;default:''"`
	ParentCall string `gorm:"not null;default:''"`
	// Owner is the user the conversation belongs to (agent/access.go); a
	// database from before accounts: 'local', who owned everything.
	Owner string `gorm:"not null;default:'local';index:idx_conversation_owner_recent,priority:1;index:idx_conversation_owner_list,priority:1"`
	// Archived and Pinned file the conversation (agent.Conversation);
	// false in a database from before them. The list reads them in its
	// order: archived last, pinned first, by idx_conversation_list.
	Archived bool `gorm:"not null;default:false;index:idx_conversation_list,priority:1;index:idx_conversation_owner_list,priority:2"`
	Pinned   bool `gorm:"not null;default:false;index:idx_conversation_list,priority:2,sort:desc;index:idx_conversation_owner_list,priority:3,sort:desc"`
	// Project is the project the conversation is in (agent/project.go);
	// '' for none, and in a database from before projects.
	Project string `gorm:"not null;default:'';index"`
}

func (conversationRow) TableName() string { return "conversation" }

// messageRow is one persisted Message; Seq is the seq of its message event.
type messageRow struct {
	ID             string           `gorm:"primaryKey"`
	ConversationID string           `gorm:"not null;uniqueIndex:idx_message_client,priority:1;index:idx_message_conversation_seq,priority:1"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	Seq            int64            `gorm:"not null;uniqueIndex;index:idx_message_conversation_seq,priority:2"`
	Type           string           `gorm:"not null"`
	Date           time.Time        `gorm:"not null"`
	ClientID       *string          `gorm:"uniqueIndex:idx_message_client,priority:2"`
	Payload        string           `gorm:"type:text;not null"`
	// ParentID is the message this one follows ("" for a first one); NULL
	// in rows from before branches: the previous message in seq order.
	ParentID *string
}

func (messageRow) TableName() string { return "message" }

// memoryRow is one ModelMessage of a conversation's working memory.
type memoryRow struct {
	ConversationID string           `gorm:"primaryKey"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	OrderIdx       int              `gorm:"primaryKey;autoIncrement:false"`
	Payload        string           `gorm:"type:text;not null"`
}

func (memoryRow) TableName() string { return "working_memory" }

// eventRow is one AllEvent of the log. ConversationID has no foreign key:
// events outlive a deleted conversation until they are pruned. Type is the
// AllEvent's type (agent or conversation).
type eventRow struct {
	Seq            int64     `gorm:"primaryKey;autoIncrement:false"`
	ID             string    `gorm:"not null;uniqueIndex"`
	ConversationID *string   // indexed by event_conversation (convindex.go)
	CreatedAt      time.Time `gorm:"not null"` // no index: see Prune and CursorAt
	Type           string    `gorm:"not null"`
	Payload        string    `gorm:"type:text;not null"`
	// Owner is the owner of its conversation when it was written ('' for an
	// event of no conversation): a member's replay reads only theirs, by
	// event_owner on SQLite, idx_event_owner_seq on PostgreSQL
	// (convindex.go).
	Owner string `gorm:"not null;default:'local'"`
}

func (eventRow) TableName() string { return "agent_event" }

// metaRow is one key of the database's metadata.
type metaRow struct {
	Key   string `gorm:"primaryKey"`
	Value string `gorm:"not null"`
}

func (metaRow) TableName() string { return "meta" }

// Keys of meta.
const (
	metaEpoch         = "epoch"          // random id made on creation
	metaPrunedThrough = "pruned_through" // highest pruned seq, decimal
)
