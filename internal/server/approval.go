package server

import (
	"context"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// approveInput is an approve: the decision on a waiting tool call.
type approveInput struct {
	conversationRef
	protocol.ApproveRequest
}

func (in *approveInput) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	if err := need("call_id", in.CallID); err != nil {
		return err
	}
	return need("decision", in.Decision)
}

// opApprove decides a waiting tool call: {} once the decision is stored
// (the turn goes on in the background).
var opApprove = declare(protocol.OpApprove, 0, func(ctx context.Context, s *Server, in approveInput) (any, error) {
	return protocol.Empty{}, s.runner.Approve(ctx, in.ConversationID, agent.ApprovalInput{CallID: in.CallID, Decision: in.Decision, Arguments: in.Arguments, Reason: in.Reason})
})
