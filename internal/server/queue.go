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
	// opListQueue lists a page of a conversation's queued sends, the next
	// first (an extension: what a page opened after they were queued
	// shows): offset, limit (default 100) and Config.QueuePageBytes bound
	// it, and next_offset says where the next page starts.
	opListQueue = declare(protocol.OpListQueue, 0, func(ctx context.Context, s *Server, in queueQuery) (any, error) {
		offset, limit := in.page()
		p, err := s.runner.Queue(ctx, in.ConversationID, agent.QueueQuery{Offset: offset, Limit: limit, Bytes: s.cfg.QueuePageBytes})
		if err != nil {
			return nil, err
		}
		out := make([]protocol.QueuedItem, len(p.Sends))
		for i, qs := range p.Sends {
			out[i] = protocol.QueuedItem{MessageID: qs.MessageID, Content: qs.Content, Position: qs.Position, ClientID: qs.ClientID}
		}
		return protocol.QueueResult{Queued: out, Total: p.Total, NextOffset: p.NextOffset}, nil
	})
)

// queueQuery is a list_queue: a conversation and a page.
type queueQuery struct {
	conversationRef
	pageQuery
}

func (q *queueQuery) check() error {
	if err := q.conversationRef.check(); err != nil {
		return err
	}
	return q.pageQuery.check()
}
