package server

import (
	"context"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// Branches (DESIGN §10.4, agent/branch.go): regenerate and edit start a
// turn on a sibling branch and answer like send ({message_id, seq}; over
// REST the turn's SSE stream); switch_branch moves the head and answers
// with the Conversation.

// allBranches reads the branch parameter of a history read: "" for the
// active path, "all" for every branch.
func allBranches(v string) (bool, error) {
	switch v {
	case "":
		return false, nil
	case "all":
		return true, nil
	}
	return false, agent.Errorf(agent.CodeBadRequest, "branch must be \"all\" or absent (the active path), got %q", agent.Shorten(v, 40))
}

// regenerateInput is a regenerate: message_id is the answer (or its user
// message) to answer again; absent, the last answer.
type regenerateInput struct {
	conversationRef
	protocol.BranchRequest
}

// editInput is an edit: the user message and its new content.
type editInput struct {
	messageRef
	Content []agent.Content `json:"content"`
}

func (in *editInput) check() error {
	if err := in.messageRef.check(); err != nil {
		return err
	}
	return needContent("edit", in.Content)
}

// branchTurn is the result of a regenerate or an edit.
func branchTurn(res agent.SendResult, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return protocol.SendResult{MessageID: res.MessageID, Seq: res.Seq}, nil
}

var (
	opRegenerate = streamed(declare(protocol.OpRegenerate, 0, func(ctx context.Context, s *Server, in regenerateInput) (any, error) {
		return branchTurn(s.runner.Regenerate(ctx, in.ConversationID, in.MessageID))
	}), streamTurn)
	opEdit = streamed(declare(protocol.OpEdit, 0, func(ctx context.Context, s *Server, in editInput) (any, error) {
		return branchTurn(s.runner.Edit(ctx, in.ConversationID, in.MessageID, in.Content))
	}), streamTurn)
	opSwitchBranch = declare(protocol.OpSwitchBranch, 0, func(ctx context.Context, s *Server, in messageRef) (any, error) {
		return s.runner.SwitchBranch(ctx, in.ConversationID, in.MessageID)
	})
)
