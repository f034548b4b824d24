package agent

import "time"

// Conversation is the summary of one conversation.
type Conversation struct {
	ID    string `wire:"id,*"`
	Title string `wire:"title,*"`
	Temp  bool   `wire:"temp,*"` // lives only in memory, never stored
	// APIRequest marks the temp conversation of a stateless API request
	// (a /v1 chat completion without X-Agentik-Conversation, a Responses
	// request with store: false), deleted when its answer ends; the UI
	// lists it as "API request" so its owner can answer its approvals.
	APIRequest   bool         `wire:"api_request,*?"`
	CreatedAt    time.Time    `wire:"created_at,*"`
	UpdatedAt    time.Time    `wire:"updated_at,*"`
	MessageCount int          `wire:"message_count,*"`
	Running      bool         `wire:"running,*"`
	TurnSeq      int64        `wire:"turn_seq,*?"` // seq of the running turn's first event; 0 when idle
	Context      *ContextSize `wire:"context,*?"`  // the last prompt's size and the model's window; nil before the first call
	// Model is the model id (<provider>/<model>); "" runs on the default.
	Model string `wire:"model,*?"`
	// SystemPrompt replaces the server's system prompt when set.
	SystemPrompt string  `wire:"system_prompt,*?"`
	Params       *Params `wire:"params,*?"`
	// Tools narrows the tools its turns are offered to these tool servers
	// (a name) and tools (a name as the model sees it), among those its
	// agent allows; nil: all of them, []: none (settings.go's ChatTools).
	Tools *[]string `wire:"tools,*?"`
	// UserTitled reports that a user gave the title, which the model's
	// titles then never overwrite.
	UserTitled bool     `wire:"user_titled,*?"`
	Queued     int      `wire:"queued,*?"`  // sends waiting for the running turn (see queue.go)
	Waiting    []string `wire:"waiting,*?"` // call ids of tool calls waiting for a decision (see approval.go)
	Head       string   `wire:"head,*?"`    // the active path's leaf message (branch.go); "" before the first message
	// Agent is the slug of the conversation's agent (agentdef.go); its
	// settings above override the agent's.
	Agent string `wire:"agent,*?"`
	// Parent links a child conversation to the delegation that started
	// it (delegate.go); nil for a conversation a person started.
	Parent *Parent `wire:"parent,*?"`
	// Pinned and Archived are a person's filing of the conversation
	// (settings.go): lists put the archived last, then the pinned first,
	// each group most recently updated first. Neither moves UpdatedAt.
	Pinned   bool `wire:"pinned,*?"`
	Archived bool `wire:"archived,*?"`
	// Project is the project the conversation is in (project.go); "" for
	// none. Its members see it (access.go); its owner moves it.
	Project string `wire:"project,*?"`
	// Knowledge are the knowledge bases attached to it (knowledge.go),
	// filled by the reads that show one conversation; not kept in its row.
	Knowledge []string `wire:"knowledge,*?"`
	// Owner is the user the conversation belongs to (access.go); "" in a
	// store that keeps none: LocalUser. Not on the wire.
	Owner string `wire:"-"`
}

// MarshalJSON implements json.Marshaler.
func (c Conversation) MarshalJSON() ([]byte, error) { return encodeWire(c) }

// UnmarshalJSON implements json.Unmarshaler.
func (c *Conversation) UnmarshalJSON(b []byte) error { return decodeWire(b, c) }
