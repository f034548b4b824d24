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

// SendCompletionAfter is SendCompletion continuing from message leaf
// instead of the conversation's head: when leaf is not the head, the turn
// starts a branch after leaf (as Edit does), which becomes the active
// path. An empty leaf, the head, or a temp conversation: SendCompletion.
// A Responses request that continues an earlier response than the latest
// (previous_response_id) branches this way.
func (r *Runner) SendCompletionAfter(ctx context.Context, id, leaf string, in CompletionInput) (SendResult, error) {
	c, err := r.conversation(ctx, id)
	if err != nil {
		return SendResult{}, err
	}
	if leaf == "" || leaf == c.Head || c.Temp {
		return r.SendCompletion(ctx, id, in)
	}
	if err := CheckClientTools(in.ClientTools); err != nil {
		return SendResult{}, err
	}
	if err := r.checkChoice(ctx, in.ToolChoice, in.ClientTools); err != nil {
		return SendResult{}, err
	}
	if err := r.CheckKnowledge(ctx, in.Knowledge); err != nil {
		return SendResult{}, err
	}
	var recs []*Record
	switch {
	case len(in.Content) > 0:
		if err := CheckContent(in.Content); err != nil {
			return SendResult{}, err
		}
		content, undo, err := r.attachFiles(ctx, in.Content) // filepart.go
		if err != nil {
			return SendResult{}, err
		}
		if _, err := r.modelContent(ctx, id, content, true); err != nil { // read again as memory is rebuilt
			undo()
			return SendResult{}, err
		}
		in.Content = content
		user := Message{Type: MessageUser, ID: NewID(), ConversationID: id, Date: r.now(), Content: in.Content}
		recs = []*Record{r.messageRecord(user)}
	case len(in.Results) > 0:
		recs = r.resultRecords(id, "", in.Results)
		for _, rec := range recs {
			rec.Memory = nil // memory is rebuilt for the new path
		}
	default:
		return SendResult{}, Errorf(CodeBadRequest, "a completion needs a user message or tool results as its last input")
	}
	t, _, err := r.idleTree(ctx, id, "branch")
	if err != nil {
		return SendResult{}, err
	}
	if _, err := t.node(id, leaf); err != nil {
		return SendResult{}, err
	}
	recs[0].Head, recs[0].StaleMemory = &leaf, true
	newHead := recs[len(recs)-1].Event.Event.Message.ID
	recs = append(recs, &Record{Event: r.agentEvent(AgentEvent{Type: AgentUpdated, ConversationID: id, Head: newHead})})
	return r.send(ctx, id, turnInput{start: recs, content: in.Content, clientTools: in.ClientTools, knowledge: in.Knowledge, format: in.ResponseFormat, choice: in.ToolChoice})
}

// CreateSeeded makes a conversation (temp, or stored) with settings s
// whose history is a request's messages but its new input: a stateless
// chat completion's, or a Responses request's input items. System entries
// in history replace the default system prompt; without any, the default
// one leads. Every other entry also becomes a message of the
// conversation's history, so the UI shows what the request carried.
func (r *Runner) CreateSeeded(ctx context.Context, history []ModelMessage, temp bool, s Settings) (Conversation, error) {
	if err := checkHistory(history); err != nil {
		return Conversation{}, err
	}
	s.Title = nil
	if err := r.checkAgentSetting(ctx, &s); err != nil { // model agent/<slug>
		return Conversation{}, err
	}
	if err := r.checkSettings(&s); err != nil {
		return Conversation{}, err
	}
	model := ""
	if s.Model != nil {
		model = *s.Model
	}
	history, memory, undo, err := r.historyFiles(ctx, history, min(r.window(ctx, model)*bytesPerToken/4, maxInlineFileBytes))
	if err != nil {
		return Conversation{}, err
	}
	c, err := r.createSeeded(ctx, history, memory, temp, s)
	if err != nil {
		undo()
	}
	return c, err
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

// createSeeded is CreateSeeded once history's files are attached: memory
// is history as the model reads it.
func (r *Runner) createSeeded(ctx context.Context, history, memory []ModelMessage, temp bool, s Settings) (Conversation, error) {
	var mem []ModelMessage
	hasSystem := false
	for _, m := range history {
		hasSystem = hasSystem || m.Role == RoleSystem
	}
	if !hasSystem || s.SystemPrompt != nil { // the setting takes the place of the first entry (chatRequest)
		slug := ""
		if s.Agent != nil {
			slug = *s.Agent
		}
		mem = append(mem, ModelMessage{Role: RoleSystem, Content: []Content{Text(r.systemPromptOf(ctx, slug))}})
	}
	mem = append(mem, memory...)
	title := ""
	for _, m := range history {
		if m.Role == RoleUser {
			title = autoTitle(m.Content)
			break
		}
	}
	now := r.now()
	c := Conversation{ID: NewID(), Title: title, Temp: temp, APIRequest: temp, CreatedAt: now, UpdatedAt: now, Owner: PrincipalFrom(ctx).UserID}
	s.apply(&c)
	recs := []*Record{{
		Event:        r.agentEvent(AgentEvent{Type: AgentCreated, ConversationID: c.ID, Title: title, Agent: c.Agent}),
		Conversation: &c,
		Memory:       mem, // the whole batch is applied at once: memory may lead its messages
	}}
	seeded := r.historyRecords(c.ID, history)
	recs = append(recs, seeded...)
	st := r.cfg.Store
	if temp {
		var err error
		if st, err = r.tempStore(); err != nil {
			return Conversation{}, err
		}
		for _, rec := range seeded {
			rec.Quiet = true // not on the all stream (Record.Quiet)
		}
	}
	if err := st.Append(ctx, recs...); err != nil {
		return Conversation{}, fmt.Errorf("create seeded conversation: %w", err)
	}
	c.MessageCount = len(recs) - 1
	return c, nil
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
	c, err := r.conversation(ctx, id)
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
