package agent

import (
	"context"
	"errors"
	"fmt"
)

// Start is the one way a turn starts from a request, on every protocol:
// it creates the conversation when the request makes one, stores the
// user's message (or the results of client-side tools) and starts the
// turn. A new conversation is written in the same append as the turn's
// first records, after every check (permission, settings, budget, model,
// input, busy), so a refused first send leaves nothing behind: no
// conversation, no event, no cache entry. No caller ever deletes what a
// refused send made.

// StartInput is what Start starts a turn with.
type StartInput struct {
	// ConversationID is the conversation the turn runs in. With New set
	// it is the id the new conversation gets ("" = a new one; the caller
	// may choose it to subscribe to the conversation before it exists).
	ConversationID string
	// New makes the conversation in the same append as the turn (see
	// NewConversation.Open for an id a client chose).
	New *NewConversation

	// Content is the user's message; or, when empty, Results are the
	// results of the client-side tool calls the previous turn ended with.
	Content []Content
	Results []ToolResult
	// ClientID makes the send idempotent: the same id again in the
	// conversation is the same turn (SendResult.Duplicate), nothing new.
	ClientID string
	// OnBusy is what happens while a turn runs (the OnBusy values; ""
	// rejects). Queue and interrupt take Content only.
	OnBusy string
	// After, when it names a message other than the head, starts the
	// turn on a branch after it (as Edit does), which becomes the active
	// path: a Responses request that continues an earlier response.
	After string

	// ClientTools are offered to the model besides the server's tools (a
	// client tool hides a server tool of the same name). The model's call
	// to one ends the turn after its round: its tool_call message is kept
	// and the client runs it, sending the result with its next request.
	ClientTools []ToolSpec
	// Knowledge are knowledge bases the turn searches with file_search
	// besides its agent's (knowledge.go); each one the caller may read.
	Knowledge []string
	// ResponseFormat constrains the answers' text on every model call of
	// the turn; nil: free text.
	ResponseFormat *ResponseFormat
	// ToolChoice applies to the turn's first model call; after a round of
	// tool calls it becomes ToolChoice.AfterRound. nil: auto.
	ToolChoice *ToolChoice
}

// NewConversation is what a new conversation is made with (Create, and
// Start with StartInput.New).
type NewConversation struct {
	Title    string
	Temp     bool // lives in memory only (Config.Temps)
	Settings Settings
	// History seeds the conversation: a stateless request's messages but
	// its new input. System entries replace the default system prompt
	// (without any, it leads); every other entry becomes a message, so
	// the UI shows what the request carried.
	History []ModelMessage
	// Open, with Start, makes StartInput.ConversationID an id a client
	// chose (the AI SDK's chat id, AG-UI's threadId): when a conversation
	// has it, the turn runs there instead, once the caller may see it
	// (another's answers not_found, as an unknown id does).
	Open bool
}

// Start starts a turn (see the top of the file). The result names the
// conversation, and says whether Start made it.
func (r *Runner) Start(ctx context.Context, in StartInput) (SendResult, error) {
	if in.New != nil {
		return r.startNew(ctx, in)
	}
	id := in.ConversationID
	if err := r.access(ctx, id); err != nil {
		return SendResult{}, err
	}
	switch in.OnBusy {
	case "", OnBusyReject:
	case OnBusyQueue, OnBusyInterrupt:
		if len(in.Results) > 0 || len(in.ClientTools) > 0 || len(in.Knowledge) > 0 || in.ResponseFormat != nil || in.ToolChoice != nil || in.After != "" {
			return SendResult{}, Errorf(CodeBadRequest, "on_busy %q queues a message: send content only", in.OnBusy)
		}
		return r.sendBusy(ctx, id, in.Content, in.ClientID, in.OnBusy)
	default:
		return SendResult{}, Errorf(CodeBadRequest, "on_busy must be %q, %q or %q, got %q", OnBusyReject, OnBusyQueue, OnBusyInterrupt, Shorten(in.OnBusy, 40))
	}
	if err := r.checkTurnInput(ctx, in); err != nil {
		return SendResult{}, err
	}
	if in.After != "" {
		c, err := r.Conversation(ctx, id)
		if err != nil {
			return SendResult{}, err
		}
		if in.After != c.Head && !c.Temp {
			return r.startAfter(ctx, id, in)
		}
	}
	if len(in.Content) == 0 {
		return r.startResults(ctx, id, nil, in)
	}
	return r.startMessage(ctx, id, nil, in)
}

// checkTurnInput checks what a turn's input offers besides its message.
func (r *Runner) checkTurnInput(ctx context.Context, in StartInput) error {
	if err := CheckClientTools(in.ClientTools); err != nil {
		return err
	}
	if err := r.checkChoice(ctx, in.ToolChoice, in.ClientTools); err != nil {
		return err
	}
	if err := r.CheckKnowledge(ctx, in.Knowledge); err != nil {
		return err
	}
	if len(in.Content) == 0 {
		if len(in.Results) == 0 {
			return Errorf(CodeBadRequest, "a turn needs a user message or tool results as its input")
		}
		for i, res := range in.Results {
			if res.CallID == "" {
				return Errorf(CodeBadRequest, "tool result %d has no tool_call_id", i)
			}
		}
		return nil
	}
	return CheckContent(in.Content)
}

// startMessage starts a turn with the user's message in conversation id:
// a stored one, or nw, made in the same append.
func (r *Runner) startMessage(ctx context.Context, id string, nw *created, in StartInput) (SendResult, error) {
	content, undo, err := r.attachFiles(ctx, in.Content) // filepart.go: files stored before anything else
	if err != nil {
		return SendResult{}, err
	}
	var budget int
	if nw != nil {
		budget = r.inlineBudgetOf(ctx, nw.conv.Model)
	} else {
		budget = r.inlineBudget(ctx, id)
	}
	mem, err := r.modelContentIn(ctx, budget, content, true) // resources read before anything is stored
	if err != nil {
		undo()
		return SendResult{}, err
	}
	res, err := r.send(ctx, id, turnInput{content: content, memory: mem, clientID: in.ClientID, clientTools: in.ClientTools, knowledge: in.Knowledge, format: in.ResponseFormat, choice: in.ToolChoice, create: nw})
	if err != nil {
		undo()
		return res, err
	}
	if hasResource(content) {
		r.subscribeResources(ctx, content) // resource.go
	}
	return res, nil
}

// startResults starts a turn with the results of client-side tool calls:
// each answers a call that waits for its result.
func (r *Runner) startResults(ctx context.Context, id string, nw *created, in StartInput) (SendResult, error) {
	var mem []ModelMessage
	if nw != nil {
		for _, rec := range nw.recs {
			mem = append(mem, rec.Memory...)
		}
	} else {
		st := r.storeOf(id)
		if in.ClientID != "" { // a retry: the same turn, before its results count as answered
			if m, ok, err := messageByClientID(ctx, st, id, in.ClientID); err != nil {
				return SendResult{}, err
			} else if ok {
				return SendResult{ConversationID: id, MessageID: m.ID, Seq: m.Seq, Duplicate: true}, nil
			}
		}
		var err error
		if mem, _, err = r.memory(ctx, st, id); err != nil {
			return SendResult{}, fmt.Errorf("send: %w", err)
		}
	}
	if err := answersCalls(mem, in.Results); err != nil {
		return SendResult{}, err
	}
	return r.send(ctx, id, turnInput{results: in.Results, clientID: in.ClientID, clientTools: in.ClientTools, knowledge: in.Knowledge, format: in.ResponseFormat, choice: in.ToolChoice, create: nw})
}

// startAfter starts a turn on a new branch after message in.After.
func (r *Runner) startAfter(ctx context.Context, id string, in StartInput) (SendResult, error) {
	leaf := in.After
	var recs []*Record
	if len(in.Content) > 0 {
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
	} else {
		recs = r.resultRecords(id, "", in.Results)
		for _, rec := range recs {
			rec.Memory = nil // memory is rebuilt for the new path
		}
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

// created is a conversation not written yet: the records that make it,
// written with the turn's first records.
type created struct {
	conv Conversation
	recs []*Record
	st   Store // where it goes: the database, or the temp store
}

// startNew is Start in a new conversation.
func (r *Runner) startNew(ctx context.Context, in StartInput) (SendResult, error) {
	n := *in.New
	id := in.ConversationID
	switch {
	case n.Open:
		if n.Temp {
			return SendResult{}, Errorf(CodeBadRequest, "a conversation a client names cannot be temporary")
		}
		if err := CheckExternalID("id", id); err != nil {
			return SendResult{}, err
		}
		if r.IsTemp(id) {
			return SendResult{}, Errorf(CodeNotFound, "conversation %s not found", id)
		}
		// The permission check comes before any write: an id that is
		// stored and not the caller's answers not_found here, and nothing
		// is created, appended or cached for it.
		if ok, err := r.exists(ctx, id); err != nil || ok {
			if err != nil {
				return SendResult{}, err
			}
			in.New = nil
			return r.Start(ctx, in)
		}
	case id == "":
		id = NewID()
	default:
		if err := CheckExternalID("conversation_id", id); err != nil {
			return SendResult{}, err
		}
	}
	switch {
	case in.After != "":
		return SendResult{}, Errorf(CodeBadRequest, "a new conversation has no message %q to continue after", Shorten(in.After, 80))
	case in.OnBusy != "" && in.OnBusy != OnBusyReject && in.OnBusy != OnBusyQueue && in.OnBusy != OnBusyInterrupt:
		return SendResult{}, Errorf(CodeBadRequest, "on_busy must be %q, %q or %q, got %q", OnBusyReject, OnBusyQueue, OnBusyInterrupt, Shorten(in.OnBusy, 40))
	}
	if err := r.checkTurnInput(ctx, in); err != nil {
		return SendResult{}, err
	}
	nw, undo, err := r.newRecords(ctx, id, n, nil)
	if err != nil {
		return SendResult{}, err
	}
	// A temp conversation a request starts is that request's.
	nw.conv.APIRequest, nw.recs[0].Conversation.APIRequest = n.Temp, n.Temp
	var res SendResult
	if len(in.Content) == 0 {
		res, err = r.startResults(ctx, id, nw, in)
	} else {
		res, err = r.startMessage(ctx, id, nw, in)
	}
	if err != nil {
		undo()
		if n.Open && ErrorCode(err) == CodeBadRequest {
			// It exists after all: made by a concurrent request (then
			// the turn runs there, or is busy), or someone else's.
			if ok, xerr := r.exists(ctx, id); xerr == nil && ok {
				in.New = nil
				return r.Start(ctx, in)
			} else if xerr != nil {
				return SendResult{}, xerr
			}
		}
		return SendResult{}, err
	}
	res.Created = true
	return res, nil
}

// exists reports whether stored conversation id exists for the caller:
// not_found when it is someone else's.
func (r *Runner) exists(ctx context.Context, id string) (bool, error) {
	c, err := r.cfg.Store.Conversation(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	if scope := Scope(ctx); scope != "" {
		if err := r.allowed(scope, c, levelRead); err != nil {
			return false, err
		}
	}
	return true, nil
}

// Create makes a conversation without starting a turn: a temp one lives
// only in memory.
func (r *Runner) Create(ctx context.Context, n NewConversation) (Conversation, error) {
	return r.create(ctx, NewID(), n, nil)
}

// create makes conversation id; parent links a delegated child
// (delegate.go).
func (r *Runner) create(ctx context.Context, id string, n NewConversation, parent *Parent) (Conversation, error) {
	nw, undo, err := r.newRecords(ctx, id, n, parent)
	if err != nil {
		return Conversation{}, err
	}
	if err := nw.st.Append(ctx, nw.recs...); err != nil {
		undo()
		return Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	c := *nw.recs[0].Conversation // as the store wrote it
	c.MessageCount = nw.conv.MessageCount
	return c, nil // its project reaches the index with its event (ProjectIndex.Committed)
}

// newRecords checks what a new conversation is made with and makes the
// records that create it, writing nothing: created, with its system
// prompt as working memory, and its seed history's messages. undo
// deletes the files the history attached, for a create refused after.
func (r *Runner) newRecords(ctx context.Context, id string, n NewConversation, parent *Parent) (*created, func(), error) {
	nothing := func() {}
	title, err := cleanTitle(n.Title, true)
	if err != nil {
		return nil, nothing, err
	}
	if err := checkHistory(n.History); err != nil {
		return nil, nothing, err
	}
	s := n.Settings
	s.Title = nil
	if s.Project != nil && *s.Project != "" {
		if n.Temp {
			return nil, nothing, Errorf(CodeBadRequest, "a temporary conversation cannot be in a project")
		}
		p, err := r.checkProject(ctx, *s.Project)
		if err != nil {
			return nil, nothing, err
		}
		if s.Agent == nil && p.Agent != "" {
			s.Agent = &p.Agent // the project's default agent
		}
	}
	if s.Agent == nil {
		s.Agent = new(string)
	}
	if err := r.checkAgentSetting(ctx, &s); err != nil { // model agent/<slug>
		return nil, nothing, err
	}
	if err := r.checkSettings(&s); err != nil {
		return nil, nothing, err
	}
	st := r.cfg.Store
	if n.Temp {
		if st, err = r.tempStore(); err != nil {
			return nil, nothing, err
		}
	}
	model := ""
	if s.Model != nil {
		model = *s.Model
	}
	history, memory, undo := n.History, n.History, nothing
	if len(n.History) > 0 {
		if history, memory, undo, err = r.historyFiles(ctx, n.History, r.inlineBudgetOf(ctx, model)); err != nil {
			return nil, nothing, err
		}
	}
	userTitled := title != ""
	if title == "" {
		for _, m := range history {
			if m.Role == RoleUser {
				title = autoTitle(m.Content)
				break
			}
		}
	}
	var mem []ModelMessage
	hasSystem := false
	for _, m := range history {
		hasSystem = hasSystem || m.Role == RoleSystem
	}
	if !hasSystem || s.SystemPrompt != nil { // the setting takes the place of the first entry (chatRequest)
		mem = append(mem, ModelMessage{Role: RoleSystem, Content: []Content{Text(r.systemPromptOf(ctx, *s.Agent))}})
	}
	mem = append(mem, memory...)
	now := r.now()
	c := Conversation{ID: id, Title: title, Temp: n.Temp, APIRequest: n.Temp && len(history) > 0, CreatedAt: now, UpdatedAt: now, UserTitled: userTitled,
		Owner: PrincipalFrom(ctx).UserID, Parent: parent}
	s.apply(&c)
	cc := c // the store rewrites the record's copy as it writes it
	recs := []*Record{{
		Event:        r.agentEvent(AgentEvent{Type: AgentCreated, ConversationID: id, Title: title, Agent: c.Agent, Parent: parent, Project: s.Project}),
		Conversation: &cc,
		Memory:       mem, // the whole batch is applied at once: memory may lead its messages
	}}
	seeded := r.historyRecords(id, history)
	for _, rec := range seeded {
		rec.Quiet = n.Temp // not on the all stream (Record.Quiet)
	}
	c.MessageCount = len(seeded)
	return &created{conv: c, recs: append(recs, seeded...), st: st}, undo, nil
}
