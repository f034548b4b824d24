package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Long-term memory (DESIGN.md §11.8): named blocks of text per user and
// agent (human and persona by default), each with a size limit, placed in
// the system prompt of every turn of that user's stored conversations on
// that agent. The model edits them with built-in tools (memory_append,
// memory_replace) and searches the user's past conversations
// (memory_search); the user reads, edits, clears and reverts them over
// REST, the WebSocket and the memory page. Every change is a MemoryChange,
// kept, shown in the turn that made it (a memory_updated event and the
// tool result's memory field) and revertible. Memory is personal: each
// user, admins too, reads and writes their own only (memoryOwner).

// Default memory blocks: every user has them for every agent, empty until
// written.
const (
	MemoryHuman   = "human"   // what the agent knows about the user
	MemoryPersona = "persona" // who the agent is with this user
)

// DefaultMemoryBlocks are the labels every (user, agent) has.
var DefaultMemoryBlocks = []string{MemoryHuman, MemoryPersona}

// Limits of memory.
const (
	// DefaultMemoryLimit is a block's size limit, in characters, unless a
	// PUT sets another.
	DefaultMemoryLimit = 2000
	// MaxMemoryLimit is the largest limit a block may have: all blocks
	// together go into every prompt.
	MaxMemoryLimit = 20000
	// MaxMemoryBlocks caps the blocks of one user and agent.
	MaxMemoryBlocks = 16
	// DefaultMemoryChanges and MaxMemoryChanges bound a list of changes.
	DefaultMemoryChanges = 50
	MaxMemoryChanges     = 500
	// memorySearchLimit is how many conversations memory_search returns.
	memorySearchLimit = 5
)

// Names of the built-in memory tools.
const (
	ToolMemoryAppend  = "memory_append"
	ToolMemoryReplace = "memory_replace"
	ToolMemorySearch  = "memory_search"
)

// memoryTools are the built-in memory tools' names.
var memoryTools = []string{ToolMemoryAppend, ToolMemoryReplace, ToolMemorySearch}

// IsMemoryTool reports whether name is a built-in memory tool.
func IsMemoryTool(name string) bool { return slices.Contains(memoryTools, name) }

// Ops of a MemoryChange.
const (
	MemoryOpAppend  = "append"  // the model's memory_append
	MemoryOpReplace = "replace" // the model's memory_replace
	MemoryOpSet     = "set"     // a person's PUT (or an import)
	MemoryOpClear   = "clear"   // a person's DELETE
	MemoryOpRevert  = "revert"  // a person undid an earlier change
)

// labelPattern is a block's label: a lowercase letter, then up to 39
// lowercase letters, digits, _ or -.
var labelPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// MemoryBlock is one block of a user's memory of an agent.
type MemoryBlock struct {
	Label string `json:"label"`
	Value string `json:"value"`
	Limit int    `json:"limit"` // in characters
}

// MemoryChange is one change of a block: who made it (a turn's tool call,
// or a person), what the block held before and after. Revert restores
// Previous.
type MemoryChange struct {
	ID    string `wire:"id,*"`
	Agent string `wire:"agent,*"`
	Label string `wire:"label,*"`
	Op    string `wire:"op,*"`
	// Summary says what changed, for people: the UI shows
	// "memory updated: <summary>".
	Summary  string `wire:"summary,*"`
	Value    string `wire:"value,*"`
	Previous string `wire:"previous,*"`
	Limit    int    `wire:"limit,*"`
	// ConversationID and CallID: the turn's tool call that made it.
	ConversationID string `wire:"conversation_id,*?"`
	CallID         string `wire:"call_id,*?"`
	// Reverts: the change a revert undid; RevertedBy: the revert that
	// undid this one.
	Reverts    string    `wire:"reverts,*?"`
	RevertedBy string    `wire:"reverted_by,*?"`
	Date       time.Time `wire:"date,*"`
	Owner      string    `wire:"-"`
}

// MarshalJSON implements json.Marshaler.
func (c MemoryChange) MarshalJSON() ([]byte, error) { return encodeWire(c) }

// UnmarshalJSON implements json.Unmarshaler.
func (c *MemoryChange) UnmarshalJSON(b []byte) error { return decodeWire(b, c) }

// MemoryStore keeps memory blocks and their changes. The database
// (package store) implements it; a Runner without one has no memory.
type MemoryStore interface {
	// MemoryBlocks returns the stored blocks of owner and agent, by label.
	MemoryBlocks(ctx context.Context, owner, agent string) ([]MemoryBlock, error)
	// ApplyMemory stores ch as one change, atomically: the block
	// (ch.Owner, ch.Agent, ch.Label) takes ch.Value and ch.Limit if it
	// still holds ch.Previous (an unstored block holds ""), else conflict;
	// ch is recorded; and ch.Reverts, when set, is marked reverted by ch
	// if it was not yet (else conflict). Nothing is written on conflict.
	ApplyMemory(ctx context.Context, ch MemoryChange) error
	// MemoryChange returns one of owner's changes, or ErrNotFound.
	MemoryChange(ctx context.Context, owner, id string) (MemoryChange, error)
	// MemoryChanges returns owner's changes of agent ("": every agent's),
	// newest first, at most limit.
	MemoryChanges(ctx context.Context, owner, agent string, limit int) ([]MemoryChange, error)
}

// memoryOwner is whose memory ctx's principal reads and writes: their own,
// always (memory is personal; an admin too sees only their own). It is the
// one rule of memory's access, beside access.go's.
func memoryOwner(ctx context.Context) (string, error) {
	p := PrincipalFrom(ctx)
	if p.UserID == "" {
		return "", Errorf(CodeUnauthorized, "sign in to use memory")
	}
	return p.UserID, nil
}

// Memory is the memory service: a person's own memory blocks, read,
// written, reverted, imported and exported. The turns read and change
// the same blocks through the Runner's Config.Memory (the prompt and the
// built-in tools below).
type Memory struct {
	r     *Runner
	store MemoryStore // nil: memory is off
}

// NewMemory makes the memory service over st; nil st (no store, or
// AGENTIK_MEMORY=off) answers every call unavailable. A missing Runner
// fails.
func NewMemory(r *Runner, st MemoryStore) (*Memory, error) {
	if r == nil {
		return nil, errors.New("memory: the Runner is required")
	}
	return &Memory{r: r, store: st}, nil
}

// memoryStore is the service's memory store, or unavailable.
func (m *Memory) memoryStore() (MemoryStore, error) {
	if m.store == nil {
		return nil, Errorf(CodeUnavailable, "this server keeps no memory")
	}
	return m.store, nil
}

// ownMemory is the store and the owner of ctx's principal's memory.
func (m *Memory) ownMemory(ctx context.Context) (MemoryStore, string, error) {
	ms, err := m.memoryStore()
	if err != nil {
		return nil, "", err
	}
	owner, err := memoryOwner(ctx)
	if err != nil {
		return nil, "", err
	}
	return ms, owner, nil
}

// memoryAgent resolves the agent of a memory request: "" is the default
// agent; one the caller may not see is not_found.
func (m *Memory) memoryAgent(ctx context.Context, slug string) (string, error) {
	slug = strings.TrimSpace(slug)
	if slug == "" || slug == DefaultAgent {
		return DefaultAgent, nil
	}
	if _, err := m.r.agent(ctx, slug); err != nil {
		return "", err
	}
	return slug, nil
}

// blocksOf is the memory of owner and agent as shown and prompted: the
// default blocks (empty unless stored), then the other stored blocks that
// hold something, by label.
func blocksOf(ctx context.Context, ms MemoryStore, owner, agent string) ([]MemoryBlock, error) {
	stored, err := ms.MemoryBlocks(ctx, owner, agent)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	out := make([]MemoryBlock, 0, len(stored)+len(DefaultMemoryBlocks))
	for _, l := range DefaultMemoryBlocks {
		b := MemoryBlock{Label: l, Limit: DefaultMemoryLimit}
		if i := slices.IndexFunc(stored, func(s MemoryBlock) bool { return s.Label == l }); i >= 0 {
			b = stored[i]
		}
		out = append(out, b)
	}
	for _, s := range stored {
		if !slices.Contains(DefaultMemoryBlocks, s.Label) && s.Value != "" {
			out = append(out, s)
		}
	}
	sort.SliceStable(out[len(DefaultMemoryBlocks):], func(i, j int) bool {
		return out[len(DefaultMemoryBlocks)+i].Label < out[len(DefaultMemoryBlocks)+j].Label
	})
	return out, nil
}

// Blocks returns the caller's memory blocks of agent ("" the default).
func (m *Memory) Blocks(ctx context.Context, agent string) ([]MemoryBlock, error) {
	ms, owner, err := m.ownMemory(ctx)
	if err != nil {
		return nil, err
	}
	if agent, err = m.memoryAgent(ctx, agent); err != nil {
		return nil, err
	}
	return blocksOf(ctx, ms, owner, agent)
}

// MemoryInput is a person's write of a block: its value, and optionally a
// new limit.
type MemoryInput struct {
	Value *string `json:"value"`
	Limit *int    `json:"limit,omitempty"`
}

// Put sets the caller's block label of agent (creating it).
func (m *Memory) Put(ctx context.Context, agent, label string, in MemoryInput) (MemoryChange, error) {
	if in.Value == nil {
		return MemoryChange{}, Errorf(CodeBadRequest, "value is required: the block's whole new text (\"\" empties it)")
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > MaxMemoryLimit) {
		return MemoryChange{}, Errorf(CodeBadRequest, "limit must be 1 to %d characters, got %d", MaxMemoryLimit, *in.Limit)
	}
	return m.changeMemory(ctx, agent, label, true, func(b MemoryBlock) (MemoryChange, error) {
		if in.Limit != nil {
			b.Limit = *in.Limit
		}
		if n := utf8.RuneCountInString(*in.Value); n > b.Limit {
			return MemoryChange{}, Errorf(CodeBadRequest, "value is %d characters long; block %q holds at most %d", n, b.Label, b.Limit)
		}
		if !utf8.ValidString(*in.Value) {
			return MemoryChange{}, Errorf(CodeBadRequest, "value must be valid UTF-8")
		}
		return MemoryChange{Op: MemoryOpSet, Value: *in.Value, Limit: b.Limit, Summary: "set " + b.Label + " to " + quote(*in.Value)}, nil
	})
}

// Clear empties the caller's block label of agent (a block that is
// not a default one then no longer shows).
func (m *Memory) Clear(ctx context.Context, agent, label string) (MemoryChange, error) {
	return m.changeMemory(ctx, agent, label, false, func(b MemoryBlock) (MemoryChange, error) {
		return MemoryChange{Op: MemoryOpClear, Value: "", Limit: b.Limit, Summary: "cleared " + b.Label}, nil
	})
}

// Revert undoes one of the caller's changes: its block goes back to
// what it held before, if it still holds what the change left (conflict
// otherwise: revert the later changes first). A change is reverted once.
func (m *Memory) Revert(ctx context.Context, id string) (MemoryChange, error) {
	ms, owner, err := m.ownMemory(ctx)
	if err != nil {
		return MemoryChange{}, err
	}
	old, err := ms.MemoryChange(ctx, owner, id)
	if err != nil {
		return MemoryChange{}, err
	}
	if old.RevertedBy != "" {
		return MemoryChange{}, Errorf(CodeConflict, "change %s was reverted already", id)
	}
	ch := MemoryChange{ID: NewID(), Owner: owner, Agent: old.Agent, Label: old.Label, Op: MemoryOpRevert,
		Value: old.Previous, Previous: old.Value, Limit: old.Limit, Reverts: old.ID, Date: m.r.now().UTC(),
		Summary: "reverted " + old.Label + " (undid: " + old.Summary + ")"}
	if err := ms.ApplyMemory(ctx, ch); err != nil {
		if errors.Is(err, ErrConflict) {
			return MemoryChange{}, Errorf(CodeConflict, "block %q changed after change %s; revert the later changes first", old.Label, id)
		}
		return MemoryChange{}, err
	}
	return ch, nil
}

// Changes lists the caller's recent changes of agent ("" every
// agent's), newest first.
func (m *Memory) Changes(ctx context.Context, agent string, limit int) ([]MemoryChange, error) {
	ms, owner, err := m.ownMemory(ctx)
	if err != nil {
		return nil, err
	}
	if agent != "" {
		if agent, err = m.memoryAgent(ctx, agent); err != nil {
			return nil, err
		}
	}
	if limit == 0 {
		limit = DefaultMemoryChanges
	}
	if limit < 1 || limit > MaxMemoryChanges {
		return nil, Errorf(CodeBadRequest, "limit must be 1 to %d, got %d", MaxMemoryChanges, limit)
	}
	out, err := ms.MemoryChanges(ctx, owner, agent, limit)
	if err != nil {
		return nil, fmt.Errorf("memory changes: %w", err)
	}
	if out == nil {
		out = []MemoryChange{}
	}
	return out, nil
}

// changeMemory applies a person's change of the caller's block: build
// makes it from the block as it is (create: a label that is not stored
// yet is a new block). A write that raced another is retried.
func (m *Memory) changeMemory(ctx context.Context, agent, label string, create bool, build func(MemoryBlock) (MemoryChange, error)) (MemoryChange, error) {
	ms, owner, err := m.ownMemory(ctx)
	if err != nil {
		return MemoryChange{}, err
	}
	if agent, err = m.memoryAgent(ctx, agent); err != nil {
		return MemoryChange{}, err
	}
	if !labelPattern.MatchString(label) {
		return MemoryChange{}, Errorf(CodeBadRequest, "label %q must be a lowercase letter then up to 39 lowercase letters, digits, _ or -, e.g. \"projects\"", Shorten(label, 60))
	}
	for range 3 {
		blocks, err := ms.MemoryBlocks(ctx, owner, agent)
		if err != nil {
			return MemoryChange{}, fmt.Errorf("memory: %w", err)
		}
		b := MemoryBlock{Label: label, Limit: DefaultMemoryLimit}
		if i := slices.IndexFunc(blocks, func(s MemoryBlock) bool { return s.Label == label }); i >= 0 {
			b = blocks[i]
		} else if !slices.Contains(DefaultMemoryBlocks, label) {
			if !create {
				return MemoryChange{}, Errorf(CodeNotFound, "no memory block %q", label)
			}
			if len(blocks) >= MaxMemoryBlocks {
				return MemoryChange{}, Errorf(CodeBadRequest, "at most %d memory blocks per agent; clear one first", MaxMemoryBlocks)
			}
		}
		ch, err := build(b)
		if err != nil {
			return MemoryChange{}, err
		}
		ch.ID, ch.Owner, ch.Agent, ch.Label, ch.Previous, ch.Date = NewID(), owner, agent, label, b.Value, m.r.now().UTC()
		err = ms.ApplyMemory(ctx, ch)
		if errors.Is(err, ErrConflict) {
			continue // changed meanwhile: read it again
		}
		if err != nil {
			return MemoryChange{}, err
		}
		return ch, nil
	}
	return MemoryChange{}, Errorf(CodeConflict, "memory block %q keeps changing; try again", label)
}

// CheckImport checks the memory blocks of an archive before
// anything of the import is written: a bad one is bad_request naming it.
func (m *Memory) CheckImport(ctx context.Context, blocks []ArchivedMemory) error {
	if len(blocks) == 0 {
		return nil
	}
	if _, err := m.memoryStore(); err != nil {
		return err
	}
	if _, err := memoryOwner(ctx); err != nil {
		return err
	}
	for i, b := range blocks {
		if !labelPattern.MatchString(b.Label) {
			return Errorf(CodeBadRequest, "memory[%d].label %q is not a block label", i, Shorten(b.Label, 60))
		}
		if b.Limit < 1 || b.Limit > MaxMemoryLimit {
			return Errorf(CodeBadRequest, "memory[%d].limit must be 1 to %d", i, MaxMemoryLimit)
		}
		if utf8.RuneCountInString(b.Value) > b.Limit || !utf8.ValidString(b.Value) {
			return Errorf(CodeBadRequest, "memory[%d].value must be valid UTF-8 of at most its limit, %d characters", i, b.Limit)
		}
		if _, err := m.memoryAgent(ctx, b.Agent); err != nil {
			return Errorf(CodeBadRequest, "memory[%d].agent %q is not an agent here", i, Shorten(b.Agent, 60))
		}
	}
	return nil
}

// Import sets the caller's blocks from an archive (each a set
// change, revertible like any other), once CheckImport passed; a
// block that already holds the same text is left as it is. It returns
// how many blocks it set.
func (m *Memory) Import(ctx context.Context, blocks []ArchivedMemory) (int, error) {
	if err := m.CheckImport(ctx, blocks); err != nil {
		return 0, err
	}
	n := 0
	for _, b := range blocks {
		cur, err := m.Blocks(ctx, b.Agent)
		if err != nil {
			return n, fmt.Errorf("import memory: %w", err)
		}
		if slices.ContainsFunc(cur, func(c MemoryBlock) bool { return c.Label == b.Label && c.Value == b.Value && c.Limit == b.Limit }) {
			continue
		}
		if _, err := m.Put(ctx, b.Agent, b.Label, MemoryInput{Value: &b.Value, Limit: &b.Limit}); err != nil {
			return n, fmt.Errorf("import memory %s/%s: %w", b.Agent, b.Label, err)
		}
		n++
	}
	return n, nil
}

// ArchivedMemory is one memory block of an Archive.
type ArchivedMemory struct {
	Agent string `json:"agent"`
	MemoryBlock
}

// Export is the caller's memory of every agent, for an archive:
// the blocks that hold something.
func (m *Memory) Export(ctx context.Context) ([]ArchivedMemory, error) {
	if m.store == nil {
		return nil, nil
	}
	owner, err := memoryOwner(ctx)
	if err != nil {
		return nil, err
	}
	agents, err := m.r.agentList(ctx)
	if err != nil {
		return nil, err
	}
	var out []ArchivedMemory
	for _, d := range agents {
		stored, err := m.store.MemoryBlocks(ctx, owner, d.Slug)
		if err != nil {
			return nil, fmt.Errorf("export memory: %w", err)
		}
		for _, b := range stored {
			if b.Value != "" {
				out = append(out, ArchivedMemory{Agent: d.Slug, MemoryBlock: b})
			}
		}
	}
	return out, nil
}

// quote shows a value in a summary: quoted, shortened.
func quote(s string) string {
	return "“" + Shorten(strings.Join(strings.Fields(s), " "), 80) + "”"
}

// The turn's side: memory in the system prompt and the built-in tools.

// memoryOn reports whether the turn uses memory: a stored conversation
// (a temp chat neither reads nor writes it) of a runner that keeps memory.
func (t *turn) memoryOn() bool {
	return t.r.cfg.Memory != nil && !t.conv.Temp
}

// memoryKey is whose memory of which agent the turn uses: the
// conversation's owner's (whoever's action runs the turn), of its agent.
func (t *turn) memoryKey() (owner, agent string) {
	agent = t.agent.Slug
	if agent == "" {
		agent = DefaultAgent
	}
	return OwnerOf(t.conv), agent
}

// memoryPrompt is the section of the system prompt that carries the
// turn's memory, read before each model call so that a change made by a
// tool call shows in the next round; "" when every block is empty (the
// prompt is then what it was before memory existed).
func (t *turn) memoryPrompt() string {
	if !t.memoryOn() {
		return ""
	}
	owner, agent := t.memoryKey()
	blocks, err := blocksOf(context.WithoutCancel(t.ctx), t.r.cfg.Memory, owner, agent)
	if err != nil {
		t.r.log.Warn("memory_unreadable", "conversation_id", t.conv.ID, "err", err)
		return ""
	}
	if !slices.ContainsFunc(blocks, func(b MemoryBlock) bool { return b.Value != "" }) {
		return ""
	}
	var b strings.Builder
	b.WriteString("<memory>\nYour long-term memory of this user, kept across conversations. Keep it current with memory_append and memory_replace when you learn something worth remembering.\n")
	for _, bl := range blocks {
		fmt.Fprintf(&b, "<block label=%q chars=\"%d/%d\">\n%s\n</block>\n", bl.Label, utf8.RuneCountInString(bl.Value), bl.Limit, bl.Value)
	}
	b.WriteString("</memory>")
	return b.String()
}

// withMemory puts the memory section at the end of the request's system
// message (one is added when it has none).
func withMemory(msgs []ModelMessage, section string) []ModelMessage {
	if section == "" {
		return msgs
	}
	out := make([]ModelMessage, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		sys := msgs[0]
		text := textOf(sys.Content)
		if text != "" {
			text += "\n\n"
		}
		sys.Content = []Content{Text(text + section)}
		out = append(out, sys)
		msgs = msgs[1:]
	} else {
		out = append(out, ModelMessage{Role: RoleSystem, Content: []Content{Text(section)}})
	}
	return append(out, msgs...)
}

var (
	memoryAppendParams  = json.RawMessage(`{"type":"object","properties":{"label":{"type":"string","description":"The block to add to: human (what you know about the user) or persona (who you are with this user)"},"text":{"type":"string","description":"What to add, as a line of its own"}},"required":["label","text"]}`)
	memoryReplaceParams = json.RawMessage(`{"type":"object","properties":{"label":{"type":"string","description":"The block to change"},"old":{"type":"string","description":"Text the block holds now, exactly, once"},"new":{"type":"string","description":"What replaces it (empty: delete it)"}},"required":["label","old","new"]}`)
	memorySearchParams  = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words to look for"}},"required":["query"]}`)
)

// memorySpecs are the memory tools the turn's agent allows.
func (t *turn) memorySpecs() []ToolSpec {
	if !t.memoryOn() {
		return nil
	}
	all := []ToolSpec{
		{Name: ToolMemoryAppend, Description: "Add a line to one of your long-term memory blocks (kept across conversations with this user and shown in your instructions): facts about the user, their preferences, how to work with them.", Parameters: memoryAppendParams},
		{Name: ToolMemoryReplace, Description: "Change or delete text in one of your long-term memory blocks: old must be text the block holds now.", Parameters: memoryReplaceParams},
		{Name: ToolMemorySearch, Description: "Search this user's past conversations for words; answers the best matching conversations with a snippet each.", Parameters: memorySearchParams},
	}
	var out []ToolSpec
	for _, s := range all {
		if t.allows(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// callMemory runs a call of a memory tool. A write that would pass the
// block's limit, an unknown block, or text not found is an error result
// the model reads, the block unchanged.
func (t *turn) callMemory(c ToolCall) Message {
	m := Message{Type: MessageToolResult, ConversationID: t.conv.ID, CallID: c.ID, Name: c.Name}
	fail := func(format string, args ...any) Message {
		m.Result, m.IsError = fmt.Sprintf(format, args...), true
		return m
	}
	if !t.memoryOn() {
		return fail("memory is not available in this conversation")
	}
	var args struct {
		Label string  `json:"label"`
		Text  string  `json:"text"`
		Old   string  `json:"old"`
		New   *string `json:"new"`
		Query string  `json:"query"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		return fail("%s: the arguments must be a JSON object: %v", c.Name, err)
	}
	ctx := context.WithoutCancel(t.ctx)
	owner, agent := t.memoryKey()
	if c.Name == ToolMemorySearch {
		return t.searchMemory(m, owner, args.Query)
	}
	ms := t.r.cfg.Memory
	for range 3 {
		blocks, err := blocksOf(ctx, ms, owner, agent)
		if err != nil {
			return fail("memory could not be read; try again later")
		}
		i := slices.IndexFunc(blocks, func(b MemoryBlock) bool { return b.Label == args.Label })
		if i < 0 {
			labels := make([]string, len(blocks))
			for j, b := range blocks {
				labels[j] = b.Label
			}
			return fail("there is no memory block %q; the blocks are: %s", Shorten(args.Label, 60), strings.Join(labels, ", "))
		}
		b := blocks[i]
		ch := MemoryChange{ID: NewID(), Owner: owner, Agent: agent, Label: b.Label, Previous: b.Value, Limit: b.Limit,
			ConversationID: t.conv.ID, CallID: c.ID, Date: t.r.now().UTC()}
		switch c.Name {
		case ToolMemoryAppend:
			text := strings.TrimSpace(args.Text)
			if text == "" {
				return fail(`memory_append takes {"label": "…", "text": "…"} with some text to add`)
			}
			ch.Op, ch.Value, ch.Summary = MemoryOpAppend, text, "added "+quote(text)+" to "+b.Label
			if b.Value != "" {
				ch.Value = b.Value + "\n" + text
			}
		case ToolMemoryReplace:
			if args.Old == "" || args.New == nil {
				return fail(`memory_replace takes {"label": "…", "old": "…", "new": "…"}: old is text the block holds now`)
			}
			switch n := strings.Count(b.Value, args.Old); n {
			case 0:
				return fail("block %s does not hold %s; it holds: %s", b.Label, quote(args.Old), quote(b.Value))
			case 1:
			default:
				return fail("block %s holds %s %d times; give old with more of the text around it so that it is found once", b.Label, quote(args.Old), n)
			}
			ch.Op, ch.Value = MemoryOpReplace, strings.Replace(b.Value, args.Old, *args.New, 1)
			ch.Summary = "replaced " + quote(args.Old) + " with " + quote(*args.New) + " in " + b.Label
			if *args.New == "" {
				ch.Summary = "removed " + quote(args.Old) + " from " + b.Label
			}
		}
		if n := utf8.RuneCountInString(ch.Value); n > b.Limit {
			return fail("block %s holds at most %d characters and would hold %d; nothing was changed: shorten what you add, or memory_replace older text with a shorter summary first", b.Label, b.Limit, n)
		}
		err = ms.ApplyMemory(ctx, ch)
		if errors.Is(err, ErrConflict) {
			continue // the user changed the block meanwhile: apply to what it holds now
		}
		if err != nil {
			t.r.log.ErrorContext(ctx, "memory_write_failed", "conversation_id", t.conv.ID, "err", err)
			return fail("memory could not be written; try again later")
		}
		change := ch
		m.Memory = &change
		m.Result = fmt.Sprintf("memory updated: %s (%s now holds %d of %d characters)", ch.Summary, b.Label, utf8.RuneCountInString(ch.Value), b.Limit)
		return m
	}
	return fail("block %s keeps changing; try again", args.Label)
}

// searchMemory answers memory_search: the owner's conversations that
// match, through the store's search (access.go's rule of who sees what).
func (t *turn) searchMemory(m Message, owner, query string) Message {
	q, err := ParseSearch(query, memorySearchLimit)
	if err != nil || len(q.Terms) == 0 {
		m.Result, m.IsError = `memory_search takes {"query": "…"}: a few words to look for`, true
		return m
	}
	if t.r.cfg.Search == nil {
		m.Result, m.IsError = "search is not available on this server", true
		return m
	}
	who := Principal{UserID: owner, Role: RoleMember}
	if owner == LocalUser {
		who = Local
	}
	res, err := t.r.search(WithPrincipal(context.WithoutCancel(t.ctx), who), t.r.cfg.Search, q)
	if err != nil {
		m.Result, m.IsError = "search failed; try again later", true
		return m
	}
	var b strings.Builder
	n := 0
	for _, s := range res {
		if s.ConversationID == t.conv.ID {
			continue // this conversation is in the context already
		}
		n++
		snippet := html.UnescapeString(strings.NewReplacer(MarkStart, "", MarkEnd, "").Replace(s.Snippet))
		fmt.Fprintf(&b, "- %q (%s, conversation %s): %s\n", s.Title, s.Date.Format("2006-01-02"), s.ConversationID, snippet)
	}
	if n == 0 {
		m.Result = "no past conversation matches " + quote(query)
		return m
	}
	m.Result = strings.TrimSuffix(b.String(), "\n")
	return m
}

// MemMemory is a MemoryStore in memory, for tests and a runner without a
// database.
type MemMemory struct {
	mu      sync.Mutex
	blocks  map[[3]string]MemoryBlock // by owner, agent, label
	changes []MemoryChange            // oldest first
}

// MemoryBlocks implements MemoryStore.
func (s *MemMemory) MemoryBlocks(_ context.Context, owner, agent string) ([]MemoryBlock, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MemoryBlock
	for k, b := range s.blocks {
		if k[0] == owner && k[1] == agent {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out, nil
}

// ApplyMemory implements MemoryStore.
func (s *MemMemory) ApplyMemory(_ context.Context, ch MemoryChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [3]string{ch.Owner, ch.Agent, ch.Label}
	if s.blocks[k].Value != ch.Previous {
		return Errorf(CodeConflict, "memory block %q changed", ch.Label)
	}
	ri := -1
	if ch.Reverts != "" {
		ri = slices.IndexFunc(s.changes, func(c MemoryChange) bool { return c.ID == ch.Reverts && c.Owner == ch.Owner })
		if ri < 0 || s.changes[ri].RevertedBy != "" {
			return Errorf(CodeConflict, "change %s was reverted already", ch.Reverts)
		}
	}
	if s.blocks == nil {
		s.blocks = map[[3]string]MemoryBlock{}
	}
	s.blocks[k] = MemoryBlock{Label: ch.Label, Value: ch.Value, Limit: ch.Limit}
	if ri >= 0 {
		s.changes[ri].RevertedBy = ch.ID
	}
	s.changes = append(s.changes, ch)
	return nil
}

// MemoryChange implements MemoryStore.
func (s *MemMemory) MemoryChange(_ context.Context, owner, id string) (MemoryChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.changes {
		if c.ID == id && c.Owner == owner {
			return c, nil
		}
	}
	return MemoryChange{}, Errorf(CodeNotFound, "no memory change %q", Shorten(id, 60))
}

// MemoryChanges implements MemoryStore.
func (s *MemMemory) MemoryChanges(_ context.Context, owner, agent string, limit int) ([]MemoryChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MemoryChange
	for i := len(s.changes) - 1; i >= 0 && len(out) < limit; i-- {
		if c := s.changes[i]; c.Owner == owner && (agent == "" || c.Agent == agent) {
			out = append(out, c)
		}
	}
	return out, nil
}
