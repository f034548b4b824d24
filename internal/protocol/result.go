package protocol

import "github.com/agentik/agentik/internal/agent"

// Results of WebSocket commands (a reply's result) and REST routes.

// SubscribeResult is the result of subscribe. Head is the highest seq
// stored when the subscription started.
type SubscribeResult struct {
	Sub   string `json:"sub"`
	Epoch string `json:"epoch"`
	Head  int64  `json:"head"`
}

// SendResult is the result of send. Seq is the seq of the user's message
// event (0 for a temp conversation): subscribing with after = seq-1 shows
// the whole turn. Duplicate says the client_id was used before and nothing
// was started.
type SendResult struct {
	MessageID string `json:"message_id"`
	Seq       int64  `json:"seq,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Queued    bool   `json:"queued,omitempty"`   // it waits for the turns before it
	Position  int    `json:"position,omitempty"` // of a queued send: 1 = runs next
}

// InterruptResult is the result of interrupt.
type InterruptResult struct {
	Interrupted bool `json:"interrupted"`
}

// Empty is the result of commands that return nothing.
type Empty struct{}

// ListResult is the result of list_conversations.
type ListResult struct {
	Conversations []agent.Conversation `json:"conversations"`
	Total         int                  `json:"total"`
}

// MessagesResult is the result of get_messages.
type MessagesResult struct {
	Messages []agent.Message `json:"messages"`
}

// ReplayResult is a page of stored events.
type ReplayResult struct {
	Events      []agent.AllEvent `json:"events"`
	NextAfterID string           `json:"next_after_id"`
}

// ToolsResult is the state of the tool servers.
type ToolsResult struct {
	Servers []agent.ToolServer `json:"servers"`
}

// ModelsResult is the result of list_models and GET /agentik/models.
type ModelsResult struct {
	Models  []agent.ModelInfo `json:"models"`
	Default string            `json:"default"`
}

// SearchResults is the result of search (GET /agentik/search and the WS op).
type SearchResults struct {
	Results []agent.SearchResult `json:"results"`
}

// QueueResult is the result of list_queue (GET …/queue): the queued
// sends, the next first.
type QueueResult struct {
	Queued []QueuedItem `json:"queued"`
}

// QueuedItem is one queued send of list_queue.
type QueuedItem struct {
	MessageID string          `json:"message_id"`
	Content   []agent.Content `json:"content"`
	Position  int             `json:"position"`
	ClientID  string          `json:"client_id,omitempty"`
}

// Readiness is the body of GET /ready.
type Readiness struct {
	Status   string `json:"status"`   // "ready" or "not_ready"
	Database string `json:"database"` // "ok" or "unreachable"
	// ToolsStarting names the enabled tool servers still in their first
	// start; a server that failed it counts as started (it is retried in
	// the background and shows as failed in /agentik/tools).
	ToolsStarting []string `json:"tools_starting"`
}
