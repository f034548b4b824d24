package agent

import (
	"context"
	"encoding/json"
	"fmt"
)

// HistoryPage is a page of history and where the next one starts.
type HistoryPage struct {
	Messages []Message
	// NextOffset, on a page read by offset, is the Offset of the next
	// page (the rest of the query unchanged) when messages follow this
	// one; 0 at the end.
	NextOffset int
	// NextEnd, on a page read with End, is the End of the page before it
	// when earlier messages remain (it is this page's first position); 0
	// at the beginning.
	NextEnd int
}

// history returns a page of a conversation's history (Conversations.History):
// Messages with where the next page starts. A page holds at most q.Limit
// messages and, with q.Bytes, ends before the message whose stored JSON
// would take it past q.Bytes; with q.End it is the latest messages
// before that position.
func (r *Runner) history(ctx context.Context, q MessageQuery) (HistoryPage, error) {
	if err := checkPage(q.Offset, q.Limit); err != nil {
		return HistoryPage{}, err
	}
	if q.After < 0 {
		return HistoryPage{}, Errorf(CodeBadRequest, "after must be 0 or more, got %d", q.After)
	}
	if q.End < 0 {
		return HistoryPage{}, Errorf(CodeBadRequest, "end must be 1 or more, got %d", q.End)
	}
	if q.End > 0 && q.Offset > 0 {
		return HistoryPage{}, Errorf(CodeBadRequest, "end pages back from a position; it is not used with offset")
	}
	if err := r.readAccess(ctx, q.ConversationID); err != nil {
		return HistoryPage{}, err
	}
	r.auditAdminRead(ctx, q.ConversationID)
	var p HistoryPage
	var err error
	st := r.storeOf(q.ConversationID)
	if b := r.branchesOf(q.ConversationID); b != nil {
		p, err = r.branchHistory(ctx, st, b, q)
	} else {
		p, err = r.flatHistory(ctx, st, q)
	}
	if err != nil {
		return HistoryPage{}, fmt.Errorf("messages: %w", err)
	}
	if p.Messages == nil {
		p.Messages = []Message{}
	}
	return p, nil
}

// auditAdminRead records an admin's read of another user's conversation
// id (an admin reading their own, or a member, is not recorded): who read
// whose messages is what an auditor asks of an admin's power.
func (r *Runner) auditAdminRead(ctx context.Context, id string) {
	p := PrincipalFrom(ctx)
	if r.cfg.Audit == nil || !p.Admin() || p.UserID == "" {
		return
	}
	c, err := r.storeOf(id).Conversation(ctx, id)
	if err != nil || OwnerOf(c) == p.UserID {
		return
	}
	r.cfg.Audit.Record(ctx, AuditAdminRead, id, map[string]string{"owner": OwnerOf(c), "read": "messages"})
}

// window picks a page out of n candidate messages whose sizes size gives:
// [from, to), and where the next page starts (see HistoryPage).
func window(n int, size func(i int) int, q MessageQuery) (from, to, nextOffset, nextEnd int) {
	if q.End > 0 {
		to = min(q.End, n)
		lo := max(0, to-q.Limit)
		from = to
		for total := 0; from > lo; from-- {
			s := size(from - 1)
			if q.Bytes > 0 && from < to && total+s > q.Bytes {
				break
			}
			total += s
		}
		return from, to, 0, from
	}
	from = min(q.Offset, n)
	hi := min(n, from+q.Limit)
	to = from
	for total := 0; to < hi; to++ {
		s := size(to)
		if q.Bytes > 0 && to > from && total+s > q.Bytes {
			break
		}
		total += s
	}
	if to < n {
		nextOffset = to
	}
	return from, to, nextOffset, 0
}

// branchHistory is History of a conversation of st, chosen from its tree
// (whose nodes carry their sizes), so only the page's messages are read.
func (r *Runner) branchHistory(ctx context.Context, st Store, b Brancher, q MessageQuery) (HistoryPage, error) {
	t, err := r.tree(ctx, b, q.ConversationID)
	if err != nil {
		return HistoryPage{}, err
	}
	var p HistoryPage
	if q.All || t.linear() {
		// The candidates are consecutive in seq order: one range read.
		first := 0
		for first < len(t.nodes) && t.nodes[first].Seq <= q.After {
			first++
		}
		cand := t.nodes[first:]
		from, to, next, end := window(len(cand), func(i int) int { return cand[i].Size }, q)
		p.NextOffset, p.NextEnd = next, end
		if from < to {
			p.Messages, err = st.Messages(ctx, MessageQuery{ConversationID: q.ConversationID, After: cand[from].Seq - 1, Limit: to - from, All: true})
		}
	} else {
		var ids []string
		var sizes []int
		for _, id := range t.path(t.head) {
			if n := t.nodes[t.byID[id]]; n.Seq > q.After {
				ids = append(ids, id)
				sizes = append(sizes, n.Size)
			}
		}
		from, to, next, end := window(len(ids), func(i int) int { return sizes[i] }, q)
		p.NextOffset, p.NextEnd = next, end
		if from < to {
			p.Messages, err = b.MessagesByID(ctx, q.ConversationID, ids[from:to])
		}
	}
	if err != nil {
		return HistoryPage{}, err
	}
	t.annotate(p.Messages)
	return p, nil
}

// flatHistory is History of a store without a tree (a test's):
// the messages are in memory already, and their sizes are measured.
func (r *Runner) flatHistory(ctx context.Context, st Store, q MessageQuery) (HistoryPage, error) {
	offset, limit := q.Offset, q.Limit+1 // one more: does anything follow?
	if q.End > 0 {
		offset = max(0, q.End-q.Limit)
		limit = q.End - offset
	}
	ms, err := st.Messages(ctx, MessageQuery{ConversationID: q.ConversationID, After: q.After, Offset: offset, Limit: limit, All: q.All})
	if err != nil { // not_found for an unknown conversation
		return HistoryPage{}, err
	}
	size := func(i int) int {
		b, _ := json.Marshal(ms[i])
		return len(b)
	}
	wq := q
	wq.Offset, wq.End = 0, 0
	if q.End > 0 {
		wq.End = len(ms)
	}
	from, to, next, end := window(len(ms), size, wq)
	p := HistoryPage{Messages: ms[from:to]}
	if next > 0 {
		p.NextOffset = offset + next
	}
	if q.End > 0 {
		p.NextEnd = offset + end
	}
	return p, nil
}
