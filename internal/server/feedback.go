package server

import (
	"context"
	"encoding/json"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// The feedback ops (DESIGN.md §12.5a), each the REST route and the
// WebSocket op of its name (op.go); agent.Feedbacks decides who may rate
// and read what.

// feedbackList is list_feedback's input: the route's {conversation_id}.
type feedbackList struct {
	ConversationID string `json:"conversation_id"`
}

func (in *feedbackList) check() error { return need("conversation_id", in.ConversationID) }

// feedbackReport is feedback_report's input.
type feedbackReport struct {
	Limit json.Number `json:"limit"`
}

// feedbackResult is the result of list_feedback.
type feedbackResult struct {
	Feedback []agent.Feedback `json:"feedback"`
}

// feedbackOp declares a feedback op: run gets the server's feedback
// service (unavailable when it has none).
func feedbackOp[T any](name string, run func(ctx context.Context, fb *agent.Feedbacks, in T) (any, error)) *op {
	return declare(name, 0, func(ctx context.Context, s *Server, in T) (any, error) {
		if s.cfg.Feedback == nil {
			return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no feedback")
		}
		return run(ctx, s.cfg.Feedback, in)
	})
}

var (
	opRateMessage = feedbackOp(protocol.OpRateMessage, func(ctx context.Context, fb *agent.Feedbacks, in agent.FeedbackInput) (any, error) {
		return fb.Rate(ctx, in)
	})
	opListFeedback = feedbackOp(protocol.OpListFeedback, func(ctx context.Context, fb *agent.Feedbacks, in feedbackList) (any, error) {
		list, err := fb.Of(ctx, in.ConversationID)
		if err != nil {
			return nil, err
		}
		return feedbackResult{Feedback: nonNil(list)}, nil
	})
	opFeedbackReport = feedbackOp(protocol.OpFeedbackReport, func(ctx context.Context, fb *agent.Feedbacks, in feedbackReport) (any, error) {
		limit, err := limitOf(in.Limit)
		if err != nil {
			return nil, err
		}
		return fb.Report(ctx, limit)
	})
)

// ratings are the caller's own ratings of a conversation's answers, by
// message id (an admin's list holds everyone's).
func (s *Server) ratings(ctx context.Context, conversationID string) (map[string]string, error) {
	list, err := s.cfg.Feedback.Of(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	me := agent.PrincipalFrom(ctx).UserID
	out := map[string]string{}
	for _, f := range list {
		if f.UserID == me {
			out[f.MessageID] = f.Rating
		}
	}
	return out, nil
}

// feedbackOf is the feedback an export of c carries: the ratings the
// caller may read (none for a temp conversation, or when a read fails:
// the export goes on without them, and the log says why).
func (s *Server) feedbackOf(ctx context.Context, c agent.Conversation) []agent.Feedback {
	if s.cfg.Feedback == nil || c.Temp {
		return nil
	}
	list, err := s.cfg.Feedback.Of(ctx, c.ID)
	if err != nil {
		s.log.Error("export_feedback_failed", "conversation_id", c.ID, "err", err)
		return nil
	}
	return list
}
