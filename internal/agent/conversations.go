package agent

import (
	"context"
	"errors"
	"fmt"
)

// ConversationsConfig is what the conversations service takes: the
// Runner (the one rule of who sees what, access.go, and the stores of
// stored and temp conversations) and the store abilities its use cases
// need beyond agent.Store.
type ConversationsConfig struct {
	Runner *Runner
	// Lister lists one owner's stored conversations (a member's list);
	// required. The temp conversations' store lists its own (TempStore).
	Lister OwnerLister
	// Versions versions the stored conversations, so that the server may
	// cache pages of the list (ListVersion); nil: nothing is cached.
	Versions Versioned
	// Sources finds the conversations already imported from a source
	// (Import is idempotent); nil: importing is unavailable.
	Sources Sources
	// Search searches the stored conversations; nil: search is
	// unavailable.
	Search Searcher
}

// Conversations is the conversations service: reading, listing, renaming
// and changing the settings of conversations, their history, their
// knowledge, importing and searching them. What runs a turn (a send, an
// interrupt, a decision, a branch) is the Runner's; deleting one is too,
// since it stops its turn first (Runner.Delete).
type Conversations struct {
	cfg ConversationsConfig
	r   *Runner
}

// NewConversations makes the conversations service; a missing Runner or
// Lister fails.
func NewConversations(cfg ConversationsConfig) (*Conversations, error) {
	if cfg.Runner == nil || cfg.Lister == nil {
		return nil, errors.New("conversations: the Runner and an OwnerLister are required")
	}
	return &Conversations{cfg: cfg, r: cfg.Runner}, nil
}

// Get returns one conversation, with its live turn state.
func (cs *Conversations) Get(ctx context.Context, id string) (Conversation, error) {
	return cs.r.conversation(ctx, id)
}

// List lists conversations, most recently updated first: temp ones
// (newest first) before the stored page.
func (cs *Conversations) List(ctx context.Context, offset, limit int) ([]Conversation, int, error) {
	r := cs.r
	if err := checkPage(offset, limit); err != nil {
		return nil, 0, err
	}
	scope, reach := ListScope(ctx), r.Reach(ctx)
	var temps []Conversation
	if r.temps != nil {
		var err error
		if temps, _, err = conversationsOf(ctx, r.temps, r.temps, scope, nil, 0, 0); err != nil { // all of them
			return nil, 0, fmt.Errorf("list conversations: %w", err)
		}
	}
	var out []Conversation
	if offset < len(temps) {
		out = append(out, temps[offset:min(len(temps), offset+limit)]...)
	}
	rest := limit - len(out)
	// With the page full of temp conversations, one row is read for the total.
	stored, total, err := conversationsOf(ctx, r.cfg.Store, cs.cfg.Lister, scope, reach, max(0, offset-len(temps)), max(rest, 1))
	if err != nil {
		return nil, 0, fmt.Errorf("list conversations: %w", err)
	}
	if rest > 0 {
		out = append(out, stored...)
	}
	if out == nil {
		out = []Conversation{}
	}
	return out, total + len(temps), nil
}

// ListVersion is a version of what List returns (see Versioned): equal
// versions, equal pages. ok is false without ConversationsConfig.Versions;
// then nothing may be cached.
func (cs *Conversations) ListVersion() (v uint64, ok bool) {
	if cs.cfg.Versions == nil {
		return 0, false
	}
	// The sum of two counters that only grow moves when either does.
	v = cs.cfg.Versions.Version()
	if cs.r.temps != nil {
		v += cs.r.temps.Version()
	}
	return v, true
}

// History returns a page of a conversation's history: Messages with where
// the next page starts (Runner.history).
func (cs *Conversations) History(ctx context.Context, q MessageQuery) (HistoryPage, error) {
	return cs.r.history(ctx, q)
}

// Messages returns a page of a conversation's history (History without
// where the next page starts).
func (cs *Conversations) Messages(ctx context.Context, q MessageQuery) ([]Message, error) {
	return cs.r.messages(ctx, q)
}

// PathInfo is how many messages the active path of c has and the highest
// seq of any of its messages (Runner.pathInfo).
func (cs *Conversations) PathInfo(ctx context.Context, c Conversation) (n int, lastSeq int64, err error) {
	return cs.r.pathInfo(ctx, c)
}

// Rename changes a conversation's title.
func (cs *Conversations) Rename(ctx context.Context, id, title string) (Conversation, error) {
	r := cs.r
	if err := r.access(ctx, id); err != nil {
		return Conversation{}, err
	}
	title, err := cleanTitle(title, false)
	if err != nil {
		return Conversation{}, err
	}
	st := r.storeOf(id)
	if _, err := st.Conversation(ctx, id); err != nil {
		return Conversation{}, err
	}
	rec := &Record{Event: r.agentEvent(AgentEvent{Type: AgentRenamed, ConversationID: id, Title: title})}
	if err := st.Append(ctx, rec); err != nil {
		return Conversation{}, fmt.Errorf("rename: %w", err)
	}
	return st.Conversation(ctx, id)
}

// Knowledge returns the bases attached to conversation id.
func (cs *Conversations) Knowledge(ctx context.Context, id string) ([]string, error) {
	return cs.r.conversationKnowledge(ctx, id)
}

// SetKnowledge attaches exactly ids to conversation id (its turns offer
// file_search over them); each one the caller may read.
func (cs *Conversations) SetKnowledge(ctx context.Context, id string, ids []string) error {
	return cs.r.setConversationKnowledge(ctx, id, ids)
}

// CheckKnowledge checks bases to attach to a conversation before anything
// is written.
func (cs *Conversations) CheckKnowledge(ctx context.Context, ids []string) error {
	return cs.r.checkConversationKnowledge(ctx, ids)
}

// Search runs q over the conversations ctx's principal sees.
func (cs *Conversations) Search(ctx context.Context, q SearchQuery) ([]SearchResult, error) {
	if cs.cfg.Search == nil {
		return nil, Errorf(CodeUnavailable, "this server's store does not search")
	}
	return cs.r.search(ctx, cs.cfg.Search, q)
}
