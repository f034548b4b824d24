package protocol

import "encoding/json"

// WebSocket ops of the inbox (docs/PROTOCOL.md, Inbox); each mirrors its
// REST route under /agentik/inbox, the route's {item_id} as the field
// item_id.
const (
	OpListInbox   = "list_inbox"
	OpAnswerInbox = "answer_inbox"
)

// StreamInbox is the subscribe stream of the caller's inbox: the log's
// approval and elicitation events of their conversations.
const StreamInbox = "inbox"

// InboxAnswerRequest is the body of POST /agentik/inbox/{item_id}: an
// approval's decision (and reason, edited arguments) or an elicitation's
// action (and content).
type InboxAnswerRequest struct {
	Decision  string          `json:"decision,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Action    string          `json:"action,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}
