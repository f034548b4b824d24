package protocol

// WebSocket ops: the op of every command a client sends (DESIGN.md §5).
const (
	OpSubscribe          = "subscribe"
	OpUnsubscribe        = "unsubscribe"
	OpCreateConversation = "create_conversation"
	OpListConversations  = "list_conversations"
	OpGetConversation    = "get_conversation"
	OpGetMessages        = "get_messages"
	OpSend               = "send"
	OpInterrupt          = "interrupt"
	OpRename             = "rename"
	OpDelete             = "delete"
	OpPing               = "ping"
	OpListTools          = "list_tools" // extension: the state of the tool servers
	OpSearch             = "search"
	OpCompact            = "compact" // summarize a conversation's earlier turns now (DESIGN §10.1)
	// Models and per-conversation settings.
	OpListModels         = "list_models"
	OpUpdateConversation = "update_conversation"
	OpCancelQueued       = "cancel_queued"
	OpApprove            = "approve"
	OpElicit             = "elicit"        // answer a tool's request for input (DESIGN §11.6)
	OpRegenerate         = "regenerate"    // answer again from an answer's user message
	OpEdit               = "edit"          // send an edited copy of a user message
	OpSwitchBranch       = "switch_branch" // move a conversation's head
	OpListQueue          = "list_queue"    // a conversation's queued sends (GET …/queue)
	OpAppCall            = "app_call"      // an MCP App's tool call (POST …/app-calls)
)

// Frame types the server sends.
const (
	FrameReply    = "reply"
	FrameEvent    = "event"
	FrameCaughtUp = "caught_up"
	FrameResync   = "resync"
)

// ResyncReasonError is the resync reason when a subscription's replay
// failed on the server's side; resubscribing with after may succeed later.
// The other reasons are the broker's (pruned, epoch, ahead, slow_consumer,
// deleted: docs/PROTOCOL.md).
const ResyncReasonError = "error"

// HTTP contract shared by the server and its clients.
const (
	// MaxBodyBytes caps a request body (and a WebSocket message): a
	// message with a 10 MB image, base64-encoded, fits.
	MaxBodyBytes = 16 << 20
	// ConversationHeader names the stored conversation a request to the
	// OpenAI-compatible /v1/chat/completions continues.
	ConversationHeader = "X-Agentik-Conversation"
)

// ConnectionOp reports whether op is one of the connection's own
// (subscribe, unsubscribe, ping), which Decode reads and checks. Every
// other op is the server's op table's (server/op.go), each with a REST
// route of the same fields: Decode leaves reading and checking its fields
// to that table, which also answers an unknown op.
func ConnectionOp(op string) bool {
	switch op {
	case OpSubscribe, OpUnsubscribe, OpPing:
		return true
	}
	return false
}
