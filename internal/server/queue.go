package server

import (
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
func writeQueued(w http.ResponseWriter, res agent.SendResult) {
	status := http.StatusAccepted
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, sendResult(res))
}

func (s *Server) handleCancelQueued(w http.ResponseWriter, r *http.Request) {
	if err := s.runner.CancelQueued(r.Context(), r.PathValue("id"), r.PathValue("message_id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleQueue lists a page of a conversation's queued sends, the next
// first (an extension: what a page opened after they were queued shows):
// offset, limit (default 100) and Config.QueuePageBytes bound it, and
// next_offset says where the next page starts.
func (s *Server) handleQueue(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.runner.Queue(r.Context(), r.PathValue("id"), agent.QueueQuery{Offset: offset, Limit: limit, Bytes: s.cfg.QueuePageBytes})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]protocol.QueuedItem, len(p.Sends))
	for i, qs := range p.Sends {
		out[i] = protocol.QueuedItem{MessageID: qs.MessageID, Content: qs.Content, Position: qs.Position, ClientID: qs.ClientID}
	}
	writeJSON(w, http.StatusOK, protocol.QueueResult{Queued: out, Total: p.Total, NextOffset: p.NextOffset})
}
