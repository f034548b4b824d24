package server

import (
	"encoding/json"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

func approvalInput(callID, decision string, args json.RawMessage, reason string) agent.ApprovalInput {
	return agent.ApprovalInput{CallID: callID, Decision: decision, Arguments: args, Reason: reason}
}

// handleApprove decides a waiting tool call: 200 {} once the decision is
// stored (the turn goes on in the background).
func (s *Server) handleApprove(w http.ResponseWriter, r *http.Request) {
	var req protocol.ApproveRequest
	if err := decodeBody(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.runner.Approve(r.Context(), r.PathValue("id"), approvalInput(req.CallID, req.Decision, req.Arguments, req.Reason)); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.Empty{})
}
