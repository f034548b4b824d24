package agent

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// StoredResponse maps an OpenAI Responses id to the part of the event log
// it is (internal/openai): the events of ConversationID after seq After,
// up to its turn's end (or the approval requests it parks on). Request is
// what the response keeps of its request (JSON, the projection's own
// shape). A projection keeps no other state: the rest is computed from
// the log. The row goes with its conversation when that is deleted.
type StoredResponse struct {
	ID             string
	ConversationID string
	After          int64
	CreatedAt      time.Time
	Request        []byte
}

// historyFiles attaches the files of history's user messages
// (filepart.go): history as stored (references) and as the model reads it.
func (r *Runner) historyFiles(ctx context.Context, history []ModelMessage, budget int) (stored, memory []ModelMessage, undo func(), err error) {
	var undos []func()
	undo = func() {
		for _, u := range undos {
			u()
		}
	}
	stored, memory = history, history
	cloned := false
	for i, m := range history {
		if m.Role != RoleUser || !hasFile(m.Content) {
			continue
		}
		if !cloned {
			stored, memory, cloned = slices.Clone(history), slices.Clone(history), true
		}
		content, u, err := r.attachFiles(ctx, m.Content)
		if err != nil {
			undo()
			return nil, nil, func() {}, Errorf(ErrorCode(err), "messages[%d]: %s", i, errMessage(err))
		}
		undos = append(undos, u)
		mem, err := r.fileParts(ctx, budget, content, true)
		if err != nil {
			undo()
			return nil, nil, func() {}, Errorf(ErrorCode(err), "messages[%d]: %s", i, errMessage(err))
		}
		stored[i].Content, memory[i].Content = content, mem
	}
	return stored, memory, undo, nil
}

// historyRecords are the records of history's messages in conversation
// id (system entries have none: they are working memory only).
func (r *Runner) historyRecords(id string, history []ModelMessage) []*Record {
	var recs []*Record
	names := map[string]string{} // tool names by call id
	for _, m := range history {
		switch m.Role {
		case RoleUser:
			recs = append(recs, r.messageRecord(Message{Type: MessageUser, ConversationID: id, Content: m.Content}))
		case RoleAssistant:
			if len(m.Content) > 0 || m.Reasoning != "" || len(m.ToolCalls) == 0 {
				recs = append(recs, r.messageRecord(Message{Type: MessageAssistant, ConversationID: id, Content: m.Content, Reasoning: m.Reasoning}))
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				recs = append(recs, r.messageRecord(Message{Type: MessageToolCall, ConversationID: id, CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}))
			}
		case RoleTool:
			res := Message{Type: MessageToolResult, ConversationID: id, CallID: m.ToolCallID, Name: m.Name}
			if res.Name == "" {
				res.Name = names[m.ToolCallID]
			}
			for _, p := range m.Content {
				res.Result += p.Body
			}
			recs = append(recs, r.messageRecord(res))
		}
	}
	return recs
}

// AddHistory appends history's entries to an idle conversation's history
// and working memory without starting a turn (the Conversations API's
// items). System entries are refused: a conversation's system prompt is
// its setting. It returns the messages written.
func (r *Runner) AddHistory(ctx context.Context, id string, history []ModelMessage) ([]Message, error) {
	if err := checkHistory(history); err != nil {
		return nil, err
	}
	for i, m := range history {
		if m.Role == RoleSystem {
			return nil, Errorf(CodeBadRequest, "items[%d] is a system message: a conversation's system prompt is its setting (instructions), not an item", i)
		}
	}
	c, err := r.Conversation(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := r.idle(ctx, c); err != nil {
		return nil, err
	}
	recs := r.historyRecords(id, history)
	if len(recs) == 0 {
		return []Message{}, nil
	}
	recs[0].Memory = history // the batch is applied at once
	if err := r.storeOf(id).Append(ctx, recs...); err != nil {
		return nil, fmt.Errorf("add history: %w", err)
	}
	out := make([]Message, len(recs))
	for i, rec := range recs {
		out[i] = *rec.Event.Event.Message
		out[i].Seq = rec.Event.Seq
	}
	return out, nil
}
