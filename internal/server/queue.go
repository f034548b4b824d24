package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// sendResult is the wire result of a send.
func sendResult(res agent.SendResult) protocol.SendResult {
	return protocol.SendResult{MessageID: res.MessageID, Seq: res.Seq, Duplicate: res.Duplicate, Queued: res.Queued, Position: res.Position}
}

// writeQueued answers a REST send that was queued: 202 with the send's
// result instead of the turn's stream (the turn has not started).
func writeQueued(w http.ResponseWriter, res protocol.SendResult) {
	status := http.StatusAccepted
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}

var (
	opCancelQueued = declare(protocol.OpCancelQueued, http.StatusNoContent, func(ctx context.Context, s *Server, in messageRef) (any, error) {
		return protocol.Empty{}, s.runner.CancelQueued(ctx, in.ConversationID, in.MessageID)
	})
	// opListQueue lists a conversation's queued sends, the next first (an
	// extension: what a page opened after they were queued shows).
	opListQueue = declare(protocol.OpListQueue, 0, func(ctx context.Context, s *Server, in conversationRef) (any, error) {
		q, err := s.runner.Queue(ctx, in.ConversationID)
		if err != nil {
			return nil, err
		}
		out := make([]protocol.QueuedItem, len(q))
		for i, qs := range q {
			out[i] = protocol.QueuedItem{MessageID: qs.MessageID, Content: qs.Content, Position: i + 1, ClientID: qs.ClientID}
		}
		return protocol.QueueResult{Queued: out}, nil
	})
)
