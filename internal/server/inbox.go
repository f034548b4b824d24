package server

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/web"
)

// The inbox ops (DESIGN.md §12.4), each the REST route under
// /agentik/inbox and the WebSocket op of its name (op.go); the inbox
// stream is a subscribe stream (ws.go, broker.StreamInbox).

// inboxList is list_inbox's input.
type inboxList struct {
	State string `json:"state"`
}

// inboxAnswer is answer_inbox's input: the route's {item_id} and the answer.
type inboxAnswer struct {
	ItemID string `json:"item_id"`
	protocol.InboxAnswerRequest
}

func (in *inboxAnswer) check() error {
	if err := need("item_id", in.ItemID); err != nil {
		return err
	}
	if in.Decision == "" && in.Action == "" {
		return agent.Errorf(agent.CodeBadRequest, "an answer needs decision (\"approve\" or \"deny\", for an approval) or action (\"accept\", \"decline\" or \"cancel\", for an elicitation)")
	}
	return nil
}

// inboxResult is the result of list_inbox.
type inboxResult struct {
	Items []agent.InboxItem `json:"items"`
}

// inboxOp declares an inbox op: run gets the server's inbox (unavailable
// when it has none).
func inboxOp[T any](name string, run func(ctx context.Context, in *agent.Inbox, input T) (any, error)) *op {
	return declare(name, 0, func(ctx context.Context, s *Server, input T) (any, error) {
		if s.cfg.Inbox == nil {
			return nil, agent.Errorf(agent.CodeUnavailable, "this server keeps no inbox")
		}
		return run(ctx, s.cfg.Inbox, input)
	})
}

var (
	opListInbox = inboxOp(protocol.OpListInbox, func(ctx context.Context, ib *agent.Inbox, in inboxList) (any, error) {
		items, err := ib.List(ctx, in.State)
		if err != nil {
			return nil, err
		}
		return inboxResult{Items: nonNil(items)}, nil
	})
	// opAnswerInbox answers an item: {} once the answer is stored (the
	// turn goes on in the background), as approve and elicit.
	opAnswerInbox = inboxOp(protocol.OpAnswerInbox, func(ctx context.Context, ib *agent.Inbox, in inboxAnswer) (any, error) {
		return protocol.Empty{}, ib.Answer(ctx, in.ItemID, agent.InboxAnswer{Decision: in.Decision, Arguments: in.Arguments, Reason: in.Reason, Action: in.Action, Content: in.Content})
	})
)

// handleInboxPage is the inbox page: the principal's pending items.
func (s *Server) handleInboxPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := s.page(ctx, "")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	p.Title, p.Nav = "Inbox · agentik", "inbox"
	v := &web.InboxView{Off: s.cfg.Inbox == nil}
	if !v.Off {
		if v.Items, err = s.cfg.Inbox.List(ctx, agent.InboxPending); err != nil {
			s.pageError(w, r, err)
			return
		}
	}
	p.Inbox = v
	s.renderPage(w, r, http.StatusOK, p)
}

// inboxCount is how many items wait in the principal's inbox (the
// navigation's badge on first paint); 0 without an inbox.
func (s *Server) inboxCount(ctx context.Context) (int, map[string]bool, error) {
	if s.cfg.Inbox == nil {
		return 0, nil, nil
	}
	items, err := s.cfg.Inbox.List(ctx, agent.InboxPending)
	input := map[string]bool{} // the conversations that wait for an answer or a sign-in
	for _, it := range items {
		if it.Kind != agent.InboxApproval {
			input[it.ConversationID] = true
		}
	}
	return len(items), input, err
}
