package server

import (
	"context"

	"github.com/agentik/agentik/internal/protocol"
)

// elicitInput is an elicit: the answer to a tool's request for input.
type elicitInput struct {
	conversationRef
	protocol.ElicitRequest
}

func (in *elicitInput) check() error {
	if err := in.conversationRef.check(); err != nil {
		return err
	}
	if err := need("request_id", in.RequestID); err != nil {
		return err
	}
	return need("action", in.Action)
}

// opElicit answers a tool's request for input: {} once the answer is
// stored (it reaches the tool in the background).
var opElicit = declare(protocol.OpElicit, 0, func(ctx context.Context, s *Server, in elicitInput) (any, error) {
	return protocol.Empty{}, s.runner.Elicit(ctx, in.ConversationID, in.Input())
})
