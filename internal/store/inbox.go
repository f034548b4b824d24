package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentik/agentik/internal/agent"
)

var _ agent.InboxStore = (*Store)(nil)

// InboxItems implements agent.InboxStore: owner's tool calls that wait
// (or waited) for a decision and tools' requests for input, read from the
// pending_call and elicitation rows (approval.go, elicit.go) of owner's
// conversations, oldest first.
func (s *Store) InboxItems(ctx context.Context, owner string, pending bool) ([]agent.InboxItem, error) {
	if !textOK(owner) {
		return []agent.InboxItem{}, nil
	}
	db := s.r.WithContext(ctx)
	owned := "conversation_id IN (SELECT id FROM conversation WHERE owner = ?)"
	var calls []pendingRow
	state := "NOT decided AND NOT resolved"
	if !pending {
		state = "(decided OR resolved)"
	}
	if err := db.Where(owned+" AND needs AND "+state, owner).Find(&calls).Error; err != nil {
		return nil, fmt.Errorf("store: inbox approvals: %w", err)
	}
	var asks []elicitRow
	if err := db.Where(owned+" AND answered = ?", owner, !pending).Find(&asks).Error; err != nil {
		return nil, fmt.Errorf("store: inbox elicitations: %w", err)
	}
	ids := make([]string, 0, len(calls)+len(asks))
	for _, c := range calls {
		ids = append(ids, c.ConversationID)
	}
	for _, e := range asks {
		ids = append(ids, e.ConversationID)
	}
	var convs []conversationRow
	if len(ids) > 0 {
		if err := db.Select("id, title, waiting").Where("id IN ?", slices.Compact(slices.Sorted(slices.Values(ids)))).Find(&convs).Error; err != nil {
			return nil, fmt.Errorf("store: inbox conversations: %w", err)
		}
	}
	title, waiting := map[string]string{}, map[string][]string{}
	for _, c := range convs {
		title[c.ID], waiting[c.ID] = c.Title, waitingIDs(c.Waiting)
	}
	items := make([]agent.InboxItem, 0, len(calls)+len(asks))
	for _, c := range calls {
		it := agent.InboxItem{ID: agent.InboxID(agent.InboxApproval, c.ConversationID, c.CallID), Kind: agent.InboxApproval,
			ConversationID: c.ConversationID, CallID: c.CallID, Title: c.Name, CreatedAt: timeOf(c.RequestedAt), State: agent.InboxPending,
			Detail: agent.InboxInfo{Conversation: title[c.ConversationID], Name: c.Name, Arguments: c.Arguments}}
		if !pending {
			it.State, it.ResolvedBy = agent.InboxResolved, c.DecidedBy
			if c.DecidedAt != nil {
				at := c.DecidedAt.UTC()
				it.ResolvedAt = &at
			}
			if c.Decided {
				it.Detail.Decision, it.Detail.Reason = decisionOf(c.Approved), c.Reason
			}
		}
		items = append(items, it)
	}
	for _, e := range asks {
		if pending && !slices.Contains(waiting[e.ConversationID], e.ID) {
			continue // no longer waited for (its call ended at a shutdown)
		}
		kind := agent.ElicitKind(e.Mode)
		it := agent.InboxItem{ID: agent.InboxID(kind, e.ConversationID, e.ID), Kind: kind,
			ConversationID: e.ConversationID, CallID: e.CallID, Title: e.Message, CreatedAt: e.RequestedAt.UTC(), State: agent.InboxPending,
			Detail: agent.InboxInfo{Conversation: title[e.ConversationID], RequestID: e.ID, Server: e.Server, Mode: e.Mode, Message: e.Message, URL: e.URL}}
		if e.Schema != "" {
			it.Detail.Schema = []byte(e.Schema)
		}
		if !pending {
			it.State, it.ResolvedBy, it.Detail.Action = agent.InboxResolved, e.AnsweredBy, e.Action
			if e.AnsweredAt != nil {
				at := e.AnsweredAt.UTC()
				it.ResolvedAt = &at
			}
		}
		items = append(items, it)
	}
	slices.SortStableFunc(items, func(a, b agent.InboxItem) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return items, nil
}
