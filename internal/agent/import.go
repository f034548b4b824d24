package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of one import: it is one transaction, and while the writer
// commits it every other write (a streaming answer's tokens) waits, so its
// size bounds that wait: 50,000 messages took 45 s on a loaded 2-core
// machine, 10,000 take a few seconds. `agentik import` sends a bigger file
// in parts of at most these sizes; each part is all or nothing, and since
// an import is idempotent per source, running it again after a failure
// completes it.
const (
	MaxImportConversations = 2_000
	MaxImportMessages      = 10_000
)

// Archive format: the agentik JSON of an export, read back by import.
const (
	ArchiveFormat  = "agentik"
	ArchiveVersion = 1
)

// Archive is agentik's export document: conversations with their history
// in wire form. Import reads it back.
type Archive struct {
	Format        string                 `json:"format"`  // ArchiveFormat
	Version       int                    `json:"version"` // ArchiveVersion
	ExportedAt    time.Time              `json:"exported_at"`
	Conversations []ArchivedConversation `json:"conversations"`
	// Memory is the exporter's long-term memory (memory.go): the blocks
	// that hold something, of every agent. Import makes them the
	// importer's.
	Memory []ArchivedMemory `json:"memory,omitempty"`
}

// MarshalJSON writes exported_at as every wire date is (FormatTime:
// milliseconds, UTC), as the streamed export (internal/archive) does;
// time.Time's own form drops trailing zeros (".12Z" for ".120Z").
func (a Archive) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Format        string                 `json:"format"`
		Version       int                    `json:"version"`
		ExportedAt    string                 `json:"exported_at"`
		Conversations []ArchivedConversation `json:"conversations"`
		Memory        []ArchivedMemory       `json:"memory,omitempty"`
	}{a.Format, a.Version, FormatTime(a.ExportedAt), a.Conversations, a.Memory})
}

// ArchivedConversation is one conversation of an Archive.
type ArchivedConversation struct {
	Conversation Conversation `json:"conversation"`
	Messages     []Message    `json:"messages"`
	// Feedback are the ratings of its answers the exporter may read
	// (feedback.go): their own, an admin's everyone's. Import skips them.
	Feedback []Feedback `json:"feedback,omitempty"`
}

// ImportConversation is a conversation to import: Source names it in the
// export it comes from ("chatgpt:<id>", "agentik:<epoch>:<id>"); Messages
// are user, assistant, tool and error messages in order (ids, seqs and
// conversation ids are given anew; dates are kept).
//
// Branches: when a message has a ParentID or Head is set, the messages are
// a tree: each names the id (in the source) of an earlier message it
// follows, "" for a first message, and Head is the leaf of the active path
// ("" = the last message). The tree is kept as it is, with new ids.
// Otherwise the messages are one path in their order.
type ImportConversation struct {
	Source    string
	owner     string // who imports it (ownSources)
	Title     string
	CreatedAt time.Time
	// UpdatedAt is when it last changed where it comes from; the imported
	// conversation keeps it (or its last message's date, when later), so
	// lists show imports in their own order, not at the import's time.
	UpdatedAt time.Time
	Messages  []Message
	Head      string
	// Settings are the conversation's model, system prompt and params (an
	// agentik export's); a model this server does not offer is dropped, so
	// the conversation answers with the default model.
	Settings Settings
}

// ImportResult says what an import did: the conversations it created, and
// the ids of those imported before from the same sources (left as they are).
type ImportResult struct {
	Conversations []Conversation `json:"conversations"`
	Existing      []string       `json:"existing"`
	// Memory counts the memory blocks the import set (memory.go).
	Memory int `json:"memory,omitempty"`
}

// Sources finds stored conversations by the source they were imported
// from; the database implements it.
type Sources interface {
	// ImportedFrom maps each of sources that a stored conversation was
	// imported from to that conversation's id.
	ImportedFrom(ctx context.Context, sources []string) (map[string]string, error)
}

// Import creates conversations with their messages, all in one Append (one
// transaction: all of it is written or none). Each message gets its message
// event, as if it had been sent, so history stays the fold of the log; user
// and assistant text also go to working memory, after the system prompt, so
// the conversation can go on. A source imported before creates nothing
// (idempotent); one whose conversation was deleted is created again.
// Without ConversationsConfig.Sources it is unavailable.
func (cs *Conversations) Import(ctx context.Context, convs []ImportConversation) (ImportResult, error) {
	r, src := cs.r, cs.cfg.Sources
	if src == nil {
		return ImportResult{}, Errorf(CodeUnavailable, "this store cannot import")
	}
	if len(convs) > MaxImportConversations {
		return ImportResult{}, Errorf(CodeTooLarge, "an import holds at most %d conversations, got %d; split the file, or import it with `agentik import FILE`, which sends it in parts", MaxImportConversations, len(convs))
	}
	convs = ownSources(ctx, convs) // access.go
	total := 0
	seen := map[string]bool{}
	var sources []string
	for i, c := range convs {
		total += len(c.Messages)
		if c.Source == "" || len(c.Source) > 512 || !utf8.ValidString(c.Source) {
			return ImportResult{}, Errorf(CodeBadRequest, "conversation %d: its source id must be 1 to 512 bytes of UTF-8", i)
		}
		if !seen[c.Source] {
			seen[c.Source] = true
			sources = append(sources, c.Source)
		}
	}
	if total > MaxImportMessages {
		return ImportResult{}, Errorf(CodeTooLarge, "an import holds at most %d messages, got %d; split the file, or import it with `agentik import FILE`, which sends it in parts", MaxImportMessages, total)
	}
	have, err := src.ImportedFrom(ctx, sources)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	res := ImportResult{Conversations: []Conversation{}, Existing: []string{}}
	var recs []*Record
	var created []*Conversation
	done := map[string]bool{}
	// The files the import stores (its file parts' bytes) are deleted
	// again when it fails: nothing of it is left.
	var undos []func()
	fail := func(err error) (ImportResult, error) {
		for _, u := range undos {
			u()
		}
		return ImportResult{}, err
	}
	for i, c := range convs {
		if id, ok := have[c.Source]; ok {
			if !done[c.Source] {
				res.Existing = append(res.Existing, id)
			}
			done[c.Source] = true
			continue
		}
		if done[c.Source] {
			continue
		}
		done[c.Source] = true
		mem, undo, err := r.importFiles(ctx, &c)
		undos = append(undos, undo)
		if err == nil {
			var crecs []*Record
			var conv *Conversation
			if crecs, conv, err = r.importRecords(c, mem); err == nil {
				recs = append(recs, crecs...)
				created = append(created, conv)
			}
		}
		if err != nil {
			return fail(fmt.Errorf("import: conversation %d (%s): %w", i, truncateRunes(c.Source, 80), err))
		}
	}
	if len(recs) > 0 {
		if err := r.cfg.Store.Append(ctx, recs...); err != nil {
			return fail(fmt.Errorf("import: %w", err))
		}
	}
	for _, c := range created {
		stored, err := r.cfg.Store.Conversation(ctx, c.ID)
		if err != nil {
			return ImportResult{}, fmt.Errorf("import: %w", err)
		}
		res.Conversations = append(res.Conversations, stored)
	}
	return res, nil
}

// importFiles stores the file parts of c's messages as the importer's
// files (filepart.go's attachFiles: a part with its bytes becomes a file
// of theirs, deduplicated; a part naming a file_id must name one they may
// read, else the import is refused as bad_request) and leaves references
// in c's messages (copied, not the caller's). mem holds, by message
// index, what working memory keeps of a user message with files: each
// part with the text the model reads. undo deletes the files it stored.
func (r *Runner) importFiles(ctx context.Context, c *ImportConversation) (mem map[int][]Content, undo func(), err error) {
	var undos []func()
	undo = func() {
		for _, u := range undos {
			u()
		}
	}
	copied := false
	for j, m := range c.Messages {
		if !hasFile(m.Content) {
			continue
		}
		if err := checkImported(m); err != nil {
			return nil, undo, fmt.Errorf("message %d: %w", j, err)
		}
		content, u, err := r.attachFiles(ctx, m.Content)
		if err != nil {
			if ErrorCode(err) == CodeNotFound {
				err = Errorf(CodeBadRequest, "%s: import the file with its bytes (data, name and mime in the part) or as a user who may read it", errMessage(err))
			}
			return nil, undo, fmt.Errorf("message %d: %w", j, err)
		}
		undos = append(undos, u)
		if !copied {
			c.Messages, copied = slices.Clone(c.Messages), true
		}
		c.Messages[j].Content = content
		if m.Type == MessageUser {
			if mem == nil {
				mem = map[int][]Content{}
			}
			model := ""
			if c.Settings.Model != nil {
				model = *c.Settings.Model
			}
			mem[j], _ = r.fileParts(ctx, r.inlineBudgetOf(ctx, model), content, false) // never fails when not strict
		}
	}
	return mem, undo, nil
}

// importRecords checks one conversation and makes its records; mem is
// importFiles' working memory of its user messages with files.
func (r *Runner) importRecords(c ImportConversation, fileMem map[int][]Content) ([]*Record, *Conversation, error) {
	title := strings.TrimSpace(c.Title)
	if utf8.RuneCountInString(title) > MaxTitleRunes {
		title = truncateRunes(title, MaxTitleRunes)
	}
	title, err := cleanTitle(title, true)
	if err != nil {
		return nil, nil, err
	}
	now := r.now()
	created := c.CreatedAt
	if created.IsZero() {
		created = now
	}
	conv := &Conversation{ID: NewID(), Title: title, CreatedAt: created, UpdatedAt: created, Owner: c.owner}
	st := c.Settings
	st.Title = nil
	if st.Model != nil && r.checkModel(strings.TrimSpace(*st.Model)) != nil {
		st.Model = nil
	}
	if err := r.checkSettings(&st); err != nil {
		return nil, nil, err
	}
	st.apply(conv)
	recs := []*Record{{
		Event:        r.agentEvent(AgentEvent{Type: AgentCreated, ConversationID: conv.ID, Title: title}),
		Conversation: conv,
		Memory:       []ModelMessage{{Role: RoleSystem, Content: []Content{Text(r.SystemPrompt())}}},
		Source:       c.Source,
	}}
	tree := c.Head != ""
	for _, m := range c.Messages {
		tree = tree || m.ParentID != ""
	}
	// In a tree, the source ids are mapped to new ones, and working memory
	// gets the active path's messages only.
	ids := map[string]string{} // source id → new id
	onPath := map[string]bool{}
	if tree {
		var err error
		if onPath, err = importPath(c); err != nil {
			return nil, nil, err
		}
	}
	last := ""
	calls := map[string]bool{} // tool calls not yet answered
	for j, m := range c.Messages {
		if err := checkImported(m); err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", j, err)
		}
		// A result answers an earlier call, once: a history with a result
		// of no call is one strict models refuse for every later turn.
		switch m.Type {
		case MessageToolCall:
			calls[m.CallID] = true
		case MessageToolResult:
			if !calls[m.CallID] {
				return nil, nil, Errorf(CodeBadRequest, "message %d: tool result for call_id %q answers no earlier tool_call of the conversation (or one already answered)", j, truncateRunes(m.CallID, 64))
			}
			delete(calls, m.CallID)
		}
		src := m.ID
		m.ID, m.Seq, m.ConversationID, m.Siblings = NewID(), 0, conv.ID, nil
		if m.Date.IsZero() {
			m.Date = created
		}
		var mem []ModelMessage
		switch m.Type {
		case MessageUser:
			content := m.Content
			if fm, ok := fileMem[j]; ok {
				content = fm
			}
			mem = []ModelMessage{{Role: RoleUser, Content: content}}
		case MessageAssistant:
			if text := MessageText(m); text != "" {
				mem = []ModelMessage{{Role: RoleAssistant, Content: []Content{Text(text)}}}
			}
		}
		if tree && !onPath[src] {
			mem = nil
		}
		rec := r.messageRecord(m, mem...)
		if tree {
			if m.ParentID == "" {
				root := "" // a first message: it follows nothing
				rec.Head = &root
			} else {
				rec.Event.Event.Message.ParentID = ids[m.ParentID]
			}
			if src != "" {
				ids[src] = m.ID
			}
		}
		last = m.ID
		recs = append(recs, rec)
		if m.Date.After(conv.UpdatedAt) {
			conv.UpdatedAt = m.Date
		}
	}
	if c.UpdatedAt.After(conv.UpdatedAt) {
		conv.UpdatedAt = c.UpdatedAt
	}
	if head := ids[c.Head]; tree && c.Head != "" && head != last {
		recs = append(recs, &Record{Event: r.agentEvent(AgentEvent{Type: AgentUpdated, ConversationID: conv.ID, Head: head}), Head: &head})
	}
	return recs, conv, nil
}

// importPath checks the tree of c (ids unique, each parent an earlier
// message, the head one of them) and returns the source ids on its active
// path.
func importPath(c ImportConversation) (map[string]bool, error) {
	parent := make(map[string]string, len(c.Messages))
	for j, m := range c.Messages {
		if m.ParentID != "" {
			if _, ok := parent[m.ParentID]; !ok {
				return nil, Errorf(CodeBadRequest, "message %d: parent_id %q is not an earlier message of the conversation", j, truncateRunes(m.ParentID, 40))
			}
		}
		if m.ID == "" {
			continue // nothing can follow it
		}
		if _, dup := parent[m.ID]; dup {
			return nil, Errorf(CodeBadRequest, "message %d: id %q is used twice", j, truncateRunes(m.ID, 40))
		}
		parent[m.ID] = m.ParentID
	}
	head := c.Head
	if head == "" && len(c.Messages) > 0 {
		head = c.Messages[len(c.Messages)-1].ID
	}
	if _, ok := parent[head]; !ok && head != "" {
		return nil, Errorf(CodeBadRequest, "head %q is not a message of the conversation", truncateRunes(head, 40))
	}
	on := map[string]bool{}
	for id := head; id != ""; id = parent[id] { // parents come earlier: no loop
		on[id] = true
	}
	return on, nil
}

// checkImported applies the limits of a sent message to an imported one.
func checkImported(m Message) error {
	switch m.Type {
	case MessageUser, MessageAssistant, MessageToolCall, MessageToolResult, MessageError:
	default:
		return Errorf(CodeBadRequest, "type %q cannot be imported", truncateRunes(m.Type, 40))
	}
	if len(m.Content) > MaxContentParts {
		return Errorf(CodeBadRequest, "%d content parts; at most %d are allowed", len(m.Content), MaxContentParts)
	}
	n := len(m.Reasoning) + len(m.Arguments) + len(m.Result) + len(m.Error)
	for _, c := range m.Content {
		switch c.Type {
		case ContentText:
			n += len(c.Body)
		case ContentImage:
			if len(c.Data) > MaxImageBytes*4/3+4 {
				return Errorf(CodeBadRequest, "an image is larger than %d bytes", MaxImageBytes)
			}
		case ContentFile: // importFiles stores it (its caps are an upload's)
			switch {
			case c.FileID == "" && c.Data == "":
				return Errorf(CodeBadRequest, "a file part needs file_id (a file of the importer's) or data (its bytes in base64, with name and mime)")
			case c.FileID != "" && c.Data != "":
				return Errorf(CodeBadRequest, "a file part has both file_id and data; keep one")
			case len(c.FileID) > 200 || len(c.Mime) > maxResourceMime:
				return Errorf(CodeBadRequest, "a file part's file_id or mime is too long")
			}
		default:
			return Errorf(CodeBadRequest, "content type %q cannot be imported", truncateRunes(c.Type, 40))
		}
	}
	if n > MaxTextBytes {
		return Errorf(CodeBadRequest, "%d bytes of text; at most %d are allowed", n, MaxTextBytes)
	}
	return nil
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
