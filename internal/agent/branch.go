package agent

import (
	"context"
	"errors"
	"fmt"
)

// Branches (DESIGN §10.4). A conversation's messages form a tree: each
// message follows its parent (Message.ParentID, "" for the first ones), and
// the conversation's head is the leaf of the active path. A message written
// without a parent follows the head and becomes the head, so a turn writes
// its messages along the active path. Regenerate and edit start a sibling
// branch; SwitchBranch moves the head. Nothing is deleted.
//
// Working memory follows the active path. A record that moves the head to
// another branch only marks working memory stale (Record.StaleMemory), so a
// switch costs a tree read and one row, not a rewrite of the memory. Who
// reads memory next (a turn, a compaction) gets ErrStaleMemory from the
// store and rebuilds it from the path's messages, the system prompt kept
// (Runner.memory); the turn's first record that writes memory writes all of
// it (turn.rebuilt), which clears the mark. Until then the mark holds,
// across restarts: a turn that fails before writing memory leaves it stale
// and the next one rebuilds again. A summary on the path is not used by the
// rebuild (the messages it stands for are all on the path); the next model
// call compacts again when the path does not fit.
//
// The tree of a stored conversation is Config.Branches', a temp one's
// is its TempStore's (Runner.branchesOf): a runner without Branches keeps
// stored conversations flat.

// Siblings is a message's place among the messages that follow the same
// parent, in seq order: Index from 1 to Count. History reads carry it only
// when Count > 1.
type Siblings struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Node is one message of a conversation's tree.
type Node struct {
	ID     string
	Parent string // "" for a first message
	Seq    int64
	Type   string
	Size   int // bytes of its stored JSON (what bounds a page of history)
}

// Brancher reads a conversation's tree; the database implements it.
type Brancher interface {
	// Tree returns the conversation's messages as nodes in seq order and
	// its head. A message stored before branches existed follows the
	// previous one in seq order; a conversation without a stored head has
	// its last message as head. An unknown conversation is ErrNotFound.
	Tree(ctx context.Context, conversationID string) ([]Node, string, error)
	// MessagesByID returns the conversation's messages with these ids, in
	// seq order.
	MessagesByID(ctx context.Context, conversationID string, ids []string) ([]Message, error)
	// SystemMemory returns the first entry of the conversation's working
	// memory, and whether it is a system prompt.
	SystemMemory(ctx context.Context, conversationID string) (ModelMessage, bool, error)
}

// tree is a conversation's message tree.
type tree struct {
	nodes    []Node
	byID     map[string]int      // index in nodes
	children map[string][]string // by parent id, in seq order
	head     string
}

func newTree(nodes []Node, head string) *tree {
	t := &tree{nodes: nodes, byID: make(map[string]int, len(nodes)), children: map[string][]string{}, head: head}
	for i, n := range nodes {
		t.byID[n.ID] = i
		t.children[n.Parent] = append(t.children[n.Parent], n.ID)
	}
	return t
}

func (r *Runner) tree(ctx context.Context, b Brancher, id string) (*tree, error) {
	nodes, head, err := b.Tree(ctx, id)
	if err != nil {
		return nil, err
	}
	return newTree(nodes, head), nil
}

// path is the ids from the first message to leaf.
func (t *tree) path(leaf string) []string {
	var rev []string
	for id := leaf; id != ""; {
		i, ok := t.byID[id]
		if !ok || len(rev) > len(t.nodes) {
			break
		}
		rev = append(rev, id)
		id = t.nodes[i].Parent
	}
	out := make([]string, len(rev))
	for i, id := range rev {
		out[len(rev)-1-i] = id
	}
	return out
}

// leaf follows the most recent child from id down to a leaf.
func (t *tree) leaf(id string) string {
	for range len(t.nodes) {
		cs := t.children[id]
		if len(cs) == 0 {
			break
		}
		id = cs[len(cs)-1]
	}
	return id
}

// linear reports whether the tree is one path ending at the head.
func (t *tree) linear() bool {
	for _, cs := range t.children {
		if len(cs) > 1 {
			return false
		}
	}
	return len(t.nodes) == 0 || t.nodes[len(t.nodes)-1].ID == t.head
}

// versions are the children of parent a user pages through: all of them
// but a failed try that was tried again (an error with a later sibling).
// Retry replaces the failed try; an error that is still the last try stays
// a version, so a regenerate that failed leaves the earlier answer one
// click away.
func (t *tree) versions(parent string) []string {
	cs := t.children[parent]
	out := cs[:0:0]
	for k, c := range cs {
		if k < len(cs)-1 && t.nodes[t.byID[c]].Type == MessageError {
			continue
		}
		out = append(out, c)
	}
	return out
}

// annotate sets each message's parent and its siblings (when it has any).
func (t *tree) annotate(ms []Message) {
	for i := range ms {
		j, ok := t.byID[ms[i].ID]
		if !ok {
			continue
		}
		p := t.nodes[j].Parent
		ms[i].ParentID = p
		cs := t.versions(p)
		if len(cs) < 2 {
			continue
		}
		for k, c := range cs {
			if c == ms[i].ID {
				ms[i].Siblings = &Siblings{Index: k + 1, Count: len(cs)}
			}
		}
	}
}

// brancher is the tree of conversation id's store, temp or stored.
func (r *Runner) brancher(ctx context.Context, id string) (Brancher, Conversation, error) {
	b := r.branchesOf(id)
	if b == nil {
		return nil, Conversation{}, Errorf(CodeUnavailable, "this store keeps no branches")
	}
	c, err := r.storeOf(id).Conversation(ctx, id)
	if err != nil {
		return nil, Conversation{}, err
	}
	return b, c, nil
}

// idle fails with busy while a turn runs in the conversation. A turn that
// is writing its end is waited for, as Send does: a client that saw the
// end may act at once.
func (r *Runner) idle(ctx context.Context, c Conversation) error {
	r.mu.Lock()
	prev := r.turns[c.ID]
	ending := prev != nil && prev.ending
	r.mu.Unlock()
	if ending {
		select {
		case <-prev.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		var err error
		if c, err = r.storeOf(c.ID).Conversation(ctx, c.ID); err != nil {
			return err
		}
		prev = nil
	}
	if prev != nil || c.Running {
		return Errorf(CodeBusy, "a turn is running in conversation %s; wait for it to end or interrupt it", c.ID)
	}
	return nil
}

// node returns message id of t, or not_found.
func (t *tree) node(convID, id string) (Node, error) {
	i, ok := t.byID[id]
	if !ok || id == "" {
		return Node{}, Errorf(CodeNotFound, "message %q not found in conversation %s", truncateRunes(id, 64), convID)
	}
	return t.nodes[i], nil
}

// rebuild is the working memory of the path to leaf: the conversation's
// system prompt, then its messages as the turn put them in memory.
func (r *Runner) rebuild(ctx context.Context, b Brancher, id string, t *tree, leaf string) ([]ModelMessage, error) {
	system, ok, err := b.SystemMemory(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		system = ModelMessage{Role: RoleSystem, Content: []Content{Text(r.SystemPrompt())}}
	}
	var ms []Message
	if ids := t.path(leaf); len(ids) > 0 {
		if ms, err = b.MessagesByID(ctx, id, ids); err != nil {
			return nil, err
		}
	}
	return memoryOf(system, ms), nil
}

// memoryOf is the working memory of messages after system: what the turn
// appended for them (an assistant message and its tool calls are one
// entry; errors and summaries have none).
func memoryOf(system ModelMessage, ms []Message) []ModelMessage {
	out := make([]ModelMessage, 1, len(ms)+1)
	out[0] = system
	var open *ModelMessage
	flush := func() {
		if open != nil {
			out = append(out, *open)
			open = nil
		}
	}
	for _, m := range ms {
		switch m.Type {
		case MessageUser:
			flush()
			out = append(out, ModelMessage{Role: RoleUser, Content: m.Content, MessageID: m.ID})
		case MessageAssistant:
			flush()
			open = &ModelMessage{Role: RoleAssistant, Content: m.Content, Reasoning: m.Reasoning}
		case MessageToolCall:
			if open == nil {
				open = &ModelMessage{Role: RoleAssistant}
			}
			open.ToolCalls = append(open.ToolCalls, ToolCall{ID: m.CallID, Name: m.Name, Arguments: m.Arguments})
		case MessageToolResult:
			flush()
			out = append(out, m.memory())
		}
	}
	flush()
	return out
}

// headRecord moves the head to leaf, marks working memory stale (the next
// reader rebuilds it for the new path), and tells every client.
func (r *Runner) headRecord(id, leaf string) *Record {
	return &Record{
		Event:       r.agentEvent(AgentEvent{Type: AgentUpdated, ConversationID: id, Head: leaf}),
		Head:        &leaf,
		StaleMemory: true,
	}
}

// memory is conversation id's working memory; when the store marks it
// stale, it is rebuilt from the active path, and rebuilt is true: the
// caller writes it with its first memory record (ReplaceMemory).
func (r *Runner) memory(ctx context.Context, st Store, id string) (mem []ModelMessage, rebuilt bool, err error) {
	mem, err = st.Memory(ctx, id)
	if !errors.Is(err, ErrStaleMemory) {
		return mem, false, err
	}
	b := r.branchesOf(id)
	if b == nil {
		return nil, false, err
	}
	t, err := r.tree(ctx, b, id)
	if err != nil {
		return nil, false, err
	}
	if mem, err = r.rebuild(ctx, b, id, t, t.head); err != nil {
		return nil, false, err
	}
	return r.memoryResources(ctx, id, mem), true, nil
}

// idleTree starts every branch operation: the conversation must be idle,
// and its tree is read (op names the operation in a read's error).
func (r *Runner) idleTree(ctx context.Context, id, op string) (*tree, Conversation, error) {
	b, c, err := r.brancher(ctx, id)
	if err != nil {
		return nil, Conversation{}, err
	}
	if err := r.idle(ctx, c); err != nil {
		return nil, Conversation{}, err
	}
	t, err := r.tree(ctx, b, id)
	if err != nil {
		return nil, Conversation{}, fmt.Errorf("%s: %w", op, err)
	}
	return t, c, nil
}

// SwitchBranch makes the branch of message messageID the active path: the
// head moves to its leaf (following the most recent message at each step)
// and working memory is marked stale, to be rebuilt for the new path by
// the next turn.
func (r *Runner) SwitchBranch(ctx context.Context, id, messageID string) (Conversation, error) {
	if err := r.access(ctx, id); err != nil {
		return Conversation{}, err
	}
	t, c, err := r.idleTree(ctx, id, "switch branch")
	if err != nil {
		return Conversation{}, err
	}
	if _, err := t.node(id, messageID); err != nil {
		return Conversation{}, err
	}
	leaf := t.leaf(messageID)
	if leaf == t.head {
		return c, nil
	}
	st := r.storeOf(id)
	if err := st.Append(ctx, r.headRecord(id, leaf)); err != nil {
		return Conversation{}, fmt.Errorf("switch branch: %w", err)
	}
	return st.Conversation(ctx, id)
}

// Regenerate answers again from the user message of answer messageID (""
// = the last answer of the active path): a sibling of that answer. The
// error message of a failed turn is regenerated the same way: that is its
// Retry. The result's MessageID is that user message.
func (r *Runner) Regenerate(ctx context.Context, id, messageID string) (SendResult, error) {
	if err := r.access(ctx, id); err != nil {
		return SendResult{}, err
	}
	t, _, err := r.idleTree(ctx, id, "regenerate")
	if err != nil {
		return SendResult{}, err
	}
	if messageID == "" {
		path := t.path(t.head)
		for i := len(path) - 1; i >= 0 && messageID == ""; i-- {
			if t.nodes[t.byID[path[i]]].Type == MessageAssistant {
				messageID = path[i]
			}
		}
		if messageID == "" {
			return SendResult{}, Errorf(CodeBadRequest, "conversation %s has no answer to regenerate", id)
		}
	}
	n, err := t.node(id, messageID)
	if err != nil {
		return SendResult{}, err
	}
	if n.Type != MessageAssistant && n.Type != MessageError {
		return SendResult{}, Errorf(CodeBadRequest, "message %s is a %s; only an assistant_message (or the error of a failed turn) can be regenerated (edit a user_message instead)", messageID, n.Type)
	}
	user := ""
	for p := n.Parent; p != "" && user == ""; {
		pn := t.nodes[t.byID[p]]
		if pn.Type == MessageUser {
			user = p
		}
		p = pn.Parent
	}
	if user == "" {
		return SendResult{}, Errorf(CodeBadRequest, "message %s follows no user message to answer again", messageID)
	}
	return r.send(ctx, id, turnInput{start: []*Record{r.headRecord(id, user)}, messageID: user})
}

// Edit sends an edited copy of user message messageID: a sibling of it,
// answered like a send.
func (r *Runner) Edit(ctx context.Context, id, messageID string, content []Content) (SendResult, error) {
	if err := r.access(ctx, id); err != nil {
		return SendResult{}, err
	}
	if err := CheckContent(content); err != nil {
		return SendResult{}, err
	}
	content, undo, err := r.attachFiles(ctx, content) // filepart.go
	if err != nil {
		return SendResult{}, err
	}
	res, err := r.edit(ctx, id, messageID, content)
	if err != nil {
		undo()
	}
	return res, err
}

// edit is Edit once content's files are attached.
func (r *Runner) edit(ctx context.Context, id, messageID string, content []Content) (SendResult, error) {
	if _, err := r.modelContent(ctx, id, content, true); err != nil { // read again as memory is rebuilt
		return SendResult{}, err
	}
	t, _, err := r.idleTree(ctx, id, "edit")
	if err != nil {
		return SendResult{}, err
	}
	n, err := t.node(id, messageID)
	if err != nil {
		return SendResult{}, err
	}
	if n.Type != MessageUser {
		return SendResult{}, Errorf(CodeBadRequest, "message %s is a %s; only a user_message can be edited (regenerate an answer instead)", messageID, n.Type)
	}
	// The copy follows the original's parent; the turn rebuilds memory for
	// the new path.
	user := Message{Type: MessageUser, ID: NewID(), ConversationID: id, Date: r.now(), Content: content}
	rec := r.messageRecord(user)
	parent := n.Parent
	rec.Head, rec.StaleMemory = &parent, true
	moved := &Record{Event: r.agentEvent(AgentEvent{Type: AgentUpdated, ConversationID: id, Head: user.ID})}
	return r.send(ctx, id, turnInput{start: []*Record{rec, moved}})
}

// pathInfo is how many messages the active path of c has (its message
// count when it has no branches) and the highest seq of any of its
// messages, on the path or not: where a client that shows the path resumes
// its stream, so messages of other branches are not replayed into it.
func (r *Runner) pathInfo(ctx context.Context, c Conversation) (n int, lastSeq int64, err error) {
	b := r.branchesOf(c.ID)
	if b == nil {
		return c.MessageCount, 0, nil
	}
	t, err := r.tree(ctx, b, c.ID)
	if err != nil {
		return 0, 0, err
	}
	if len(t.nodes) > 0 && !r.IsTemp(c.ID) { // a temp conversation's events have seq 0
		lastSeq = t.nodes[len(t.nodes)-1].Seq
	}
	if t.linear() {
		return len(t.nodes), lastSeq, nil
	}
	return len(t.path(t.head)), lastSeq, nil
}
