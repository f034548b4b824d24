package server

import (
	"context"

	"github.com/agentik/agentik/internal/protocol"
)

// opCompact summarizes a conversation's earlier turns now:
// {"compacted":true,"message":summary_message}, or {"compacted":false,
// "reason"} when there is nothing to compact; a temp conversation is
// bad_request, an unknown one not_found, a running one busy.
var opCompact = declare(protocol.OpCompact, 0, func(ctx context.Context, s *Server, in conversationRef) (any, error) {
	return s.runner.Compact(ctx, in.ConversationID)
})
