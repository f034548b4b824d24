package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/protocol"
)

// Branches (DESIGN §10.4, agent/branch.go): regenerate and edit start a
// turn on a sibling branch; switch_branch moves the head. Over REST,
// regenerate and edit answer like send, with the turn's SSE stream.

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

// branchOp runs regenerate, edit or switch_branch: regenerate and edit
// answer like send ({message_id, seq}), switch_branch with the
// Conversation.
func branchOp(ctx context.Context, r *agent.Runner, cmd protocol.Command) (any, error) {
	var res agent.SendResult
	var err error
	switch cmd.Op {
	case protocol.OpSwitchBranch:
		return r.SwitchBranch(ctx, cmd.ConversationID, cmd.MessageID)
	case protocol.OpRegenerate:
		res, err = r.Regenerate(ctx, cmd.ConversationID, cmd.MessageID)
	default:
		res, err = r.Edit(ctx, cmd.ConversationID, cmd.MessageID, cmd.Content)
	}
	if err != nil {
		return nil, err
	}
	return protocol.SendResult{MessageID: res.MessageID, Seq: res.Seq}, nil
}

func (s *Server) handleRegenerate(w http.ResponseWriter, r *http.Request) {
	s.branchTurn(w, r, protocol.OpRegenerate, true)
}

func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	s.branchTurn(w, r, protocol.OpEdit, false)
}

// branchTurn starts a regenerate or edit and streams its turn like send.
func (s *Server) branchTurn(w http.ResponseWriter, r *http.Request, op string, empty bool) {
	id := r.PathValue("id")
	var req protocol.BranchRequest
	if err := decodeBody(r, &req, empty); err != nil {
		s.writeError(w, r, err)
		return
	}
	cmd := protocol.Command{Op: op, ConversationID: id, MessageID: req.MessageID, Content: req.Content}
	if err := cmd.Check(); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := branchOp(r.Context(), s.runner, cmd)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Replay from the turn's first event: nothing of it is missed.
	sub, err := s.broker.Subscribe(r.Context(), broker.Stream{Kind: broker.StreamConversation, ConversationID: id}, res.(protocol.SendResult).Seq-1, "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveSSE(w, r, sub, conversationFrame, true)
}

// handleSwitchBranch moves the head: 200 with the Conversation.
func (s *Server) handleSwitchBranch(w http.ResponseWriter, r *http.Request) {
	var req protocol.BranchRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	cmd := protocol.Command{Op: protocol.OpSwitchBranch, ConversationID: r.PathValue("id"), MessageID: req.MessageID}
	if err := cmd.Check(); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := branchOp(r.Context(), s.runner, cmd)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}
