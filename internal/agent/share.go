package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Share links (DESIGN.md §12.2): a conversation's owner makes a read-only
// link to it as it is at that moment, /s/{token}. The token is 256 random
// bits, shown once and kept only as its hash; the link names the
// conversation's active path then (its head message and the seq of its
// last message), so turns, edits and branch switches made later are not
// in it. Whoever holds the link reads that transcript (a signed-in user,
// or anyone when the server's public shares are on: the server decides
// who may open /s/ at all); a signed-in user may continue it as their own
// copy (an import of the transcript). A wrong token, a revoked link (its
// row is deleted), an expired one and a link to a deleted conversation
// (deleting it deletes its links, in the transaction of its deletion) are
// one and the same not_found.

// Limits of share links.
const (
	// maxShareToken bounds what is hashed: a longer token is wrong.
	maxShareToken = 128
	// MaxShareMessages is how many of its latest messages a share page
	// shows; the earlier ones are counted.
	MaxShareMessages = MaxPageSize
	// MaxSharesPerUser caps one user's live links.
	MaxSharesPerUser = 1000
)

// SharePrefix is the path of a share link without its token.
const SharePrefix = "/s/"

// Share is a share link as its owner sees it.
type Share struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id"`
	Owner          string `json:"owner"`
	// Title is the conversation's title when the link was made.
	Title string `json:"title"`
	// Head is the leaf message of the shared path; Seq the seq of the
	// path's last message (what the link shows ends there).
	Head string `json:"-"`
	Seq  int64  `json:"seq"`
	// URL is /s/{token}: only in the answer that made the link (the
	// token is kept as its hash).
	URL       string     `json:"url,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// ShareInput makes a share link: ExpiresAt (optional) must be later than now.
type ShareInput struct {
	ExpiresAt *time.Time `json:"expires_at"`
}

// SharedConversation is what a link shows: the conversation as it was
// (its title then), and the latest messages of its path then.
type SharedConversation struct {
	Share        Share
	Conversation Conversation
	Messages     []Message
	Omitted      int // earlier messages of the path not in Messages
}

// ShareStore keeps share links by the hash of their token.
type ShareStore interface {
	// CreateShare keeps s, found later by hash.
	CreateShare(ctx context.Context, s Share, hash string) error
	// ShareByHash returns the link whose token hashes to hash, or not_found.
	ShareByHash(ctx context.Context, hash string) (Share, error)
	// Share returns link id, or not_found.
	Share(ctx context.Context, id string) (Share, error)
	// Shares lists owner's links, newest first.
	Shares(ctx context.Context, owner string) ([]Share, error)
	// DeleteShare deletes link id (revokes it), or not_found.
	DeleteShare(ctx context.Context, id string) error
}

// SharesConfig configures the share links service.
type SharesConfig struct {
	Store  ShareStore
	Runner *Runner // the conversations it reads
	// Conversations imports a link's copy as the reader's own.
	Conversations *Conversations
	Now           Clock
}

// Shares is the share links service.
type Shares struct {
	cfg SharesConfig
}

// NewShares makes the share links service.
func NewShares(cfg SharesConfig) (*Shares, error) {
	if cfg.Store == nil || cfg.Runner == nil || cfg.Conversations == nil {
		return nil, errors.New("shares: a ShareStore, the Runner and the conversations service are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Shares{cfg: cfg}, nil
}

// errNoShare is the one answer to a link that shows nothing: a wrong
// token, a revoked or expired link, a deleted conversation.
func errNoShare() error {
	return Errorf(CodeNotFound, "this link does not exist, was revoked, or has expired")
}

// Create makes a link to conversation id as it is now: its owner's (or an
// admin's) alone; a project member who is not its owner gets forbidden.
func (sh *Shares) Create(ctx context.Context, id string, in ShareInput) (Share, error) {
	r := sh.cfg.Runner
	pr := PrincipalFrom(ctx)
	if pr.UserID == "" {
		return Share{}, Errorf(CodeUnauthorized, "sign in to share a conversation")
	}
	if err := r.ownAccess(ctx, id); err != nil {
		return Share{}, err
	}
	if r.IsTemp(id) {
		return Share{}, Errorf(CodeBadRequest, "a temporary conversation cannot be shared")
	}
	now := sh.cfg.Now().UTC()
	if in.ExpiresAt != nil {
		if !in.ExpiresAt.After(now) {
			return Share{}, Errorf(CodeBadRequest, "expires_at must be in the future")
		}
		t := in.ExpiresAt.UTC()
		in.ExpiresAt = &t
	}
	b, c, err := r.brancher(ctx, id)
	if err != nil {
		return Share{}, err
	}
	t, err := r.tree(ctx, b, id)
	if err != nil {
		return Share{}, err
	}
	path := t.path(t.head)
	if len(path) == 0 {
		return Share{}, Errorf(CodeBadRequest, "the conversation has no messages to share yet")
	}
	mine, err := sh.cfg.Store.Shares(ctx, pr.UserID)
	if err != nil {
		return Share{}, err
	}
	if len(mine) >= MaxSharesPerUser {
		return Share{}, Errorf(CodeTooLarge, "you have %d share links, the most one may keep; revoke some first", len(mine))
	}
	token, hash, err := newToken()
	if err != nil {
		return Share{}, err
	}
	s := Share{ID: "shr_" + NewID(), ConversationID: id, Owner: pr.UserID, Title: c.Title,
		Head: t.head, Seq: t.nodes[t.byID[t.head]].Seq, CreatedAt: now, ExpiresAt: in.ExpiresAt}
	if err := sh.cfg.Store.CreateShare(ctx, s, hash); err != nil {
		return Share{}, err
	}
	r.cfg.Audit.Record(ctx, AuditShareCreated, s.ID, map[string]any{"conversation_id": id, "expires_at": s.ExpiresAt})
	s.URL = SharePrefix + token
	return s, nil
}

// List lists the caller's links, newest first.
func (sh *Shares) List(ctx context.Context) ([]Share, error) {
	pr := PrincipalFrom(ctx)
	if pr.UserID == "" {
		return []Share{}, nil
	}
	return sh.cfg.Store.Shares(ctx, pr.UserID)
}

// Revoke deletes link id: its owner's or an admin's; anyone else's is
// not_found.
func (sh *Shares) Revoke(ctx context.Context, id string) error {
	s, err := sh.cfg.Store.Share(ctx, id)
	pr := PrincipalFrom(ctx)
	if errors.Is(err, ErrNotFound) || err == nil && s.Owner != pr.UserID && !pr.Admin() {
		return Errorf(CodeNotFound, "share link %q not found", Shorten(id, 80))
	}
	if err != nil {
		return err
	}
	if err := sh.cfg.Store.DeleteShare(ctx, id); err != nil {
		return err
	}
	sh.cfg.Runner.cfg.Audit.Record(ctx, AuditShareRevoked, id, map[string]any{"conversation_id": s.ConversationID})
	return nil
}

// Open reads what the link of token shows. It checks no principal: the
// token is the permission (the server decides who may open links at all).
func (sh *Shares) Open(ctx context.Context, token string) (SharedConversation, error) {
	if token == "" || len(token) > maxShareToken {
		return SharedConversation{}, errNoShare()
	}
	s, err := sh.cfg.Store.ShareByHash(ctx, HashKey(token))
	if errors.Is(err, ErrNotFound) {
		return SharedConversation{}, errNoShare()
	}
	if err != nil {
		return SharedConversation{}, err
	}
	if s.ExpiresAt != nil && !sh.cfg.Now().Before(*s.ExpiresAt) {
		return SharedConversation{}, errNoShare()
	}
	r := sh.cfg.Runner
	b, c, err := r.brancher(ctx, s.ConversationID)
	if errors.Is(err, ErrNotFound) {
		return SharedConversation{}, errNoShare()
	}
	if err != nil {
		return SharedConversation{}, err
	}
	t, err := r.tree(ctx, b, s.ConversationID)
	if err != nil {
		return SharedConversation{}, err
	}
	path := t.path(s.Head)
	out := SharedConversation{Share: s, Conversation: c}
	out.Conversation.Title = s.Title
	if len(path) > MaxShareMessages {
		out.Omitted = len(path) - MaxShareMessages
		path = path[out.Omitted:]
	}
	if len(path) > 0 {
		if out.Messages, err = b.MessagesByID(ctx, s.ConversationID, path); err != nil {
			return SharedConversation{}, fmt.Errorf("share: %w", err)
		}
	}
	return out, nil
}

// Copy continues the link of token as the caller's own conversation: a
// new conversation of theirs whose history is the shared transcript (an
// import, so it is one append; the same link copied again by the same
// user gives back their copy while it exists). The original is untouched.
func (sh *Shares) Copy(ctx context.Context, token string) (Conversation, error) {
	pr := PrincipalFrom(ctx)
	if pr.UserID == "" {
		return Conversation{}, Errorf(CodeUnauthorized, "sign in to continue a shared conversation")
	}
	sc, err := sh.Open(ctx, token)
	if err != nil {
		return Conversation{}, err
	}
	var msgs []Message
	calls := map[string]bool{}
	for _, m := range sc.Messages {
		switch m.Type {
		case MessageUser, MessageAssistant, MessageError:
		case MessageToolCall:
			calls[m.CallID] = true
		case MessageToolResult:
			if !calls[m.CallID] { // its call is before the page's first message
				continue
			}
		default:
			continue // a summary, a note: not history a model reads
		}
		m.ParentID, m.Siblings = "", nil
		msgs = append(msgs, m)
	}
	res, err := sh.cfg.Conversations.Import(ctx, []ImportConversation{{
		Source:    "share:" + sc.Share.ID,
		Title:     sc.Share.Title,
		CreatedAt: sh.cfg.Now().UTC(),
		Messages:  msgs,
	}})
	if err != nil {
		return Conversation{}, err
	}
	if len(res.Conversations) > 0 {
		return res.Conversations[0], nil
	}
	if len(res.Existing) > 0 {
		return sh.cfg.Conversations.Get(ctx, res.Existing[0])
	}
	return Conversation{}, fmt.Errorf("share: copy: nothing imported")
}

// AppOf names the MCP App a tool (by its name as the model sees it)
// names through its definition (_meta.ui.resourceUri): its server and
// ui:// URI; ok false for none. The caller knows the tool servers' lists.
type AppOf func(tool string) (server, uri string, ok bool)

// SharedApp is the MCP App of a tool card a link shows.
type SharedApp struct{ Server, URI string }

// Apps are the MCP Apps of the tool cards sc shows, by call id: a call
// whose tool names an app (appOf), or whose result links a ui://
// resource. An app's own call (AppCallPrefix) shows none, as in the chat.
func (sc SharedConversation) Apps(appOf AppOf) map[string]SharedApp {
	out := map[string]SharedApp{}
	for _, m := range sc.Messages {
		if m.CallID == "" || isAppCall(m.CallID) {
			continue
		}
		switch m.Type {
		case MessageToolCall:
			if server, uri, ok := appOf(m.Name); ok && strings.HasPrefix(uri, "ui://") {
				out[m.CallID] = SharedApp{Server: server, URI: uri}
			}
		case MessageToolResult:
			if _, ok := out[m.CallID]; ok {
				continue
			}
			for _, c := range m.Resources {
				if c.Type == ContentResource && c.Server != "" && strings.HasPrefix(c.URI, "ui://") {
					out[m.CallID] = SharedApp{Server: c.Server, URI: c.URI}
					break
				}
			}
		}
	}
	return out
}

// ReadApp reads the MCP App of the tool card of callID that the link of
// token shows (its shared view renders it, without tool calls): the token
// is the permission, as for Open, and only the apps of the calls the link
// shows are read (any other call is not_found). The tool servers'
// resources are read as a signed-in user: as the link's owner.
func (sh *Shares) ReadApp(ctx context.Context, token, callID string, appOf AppOf) (ResourceRead, error) {
	sc, err := sh.Open(ctx, token)
	if err != nil {
		return ResourceRead{}, err
	}
	app, ok := sc.Apps(appOf)[callID]
	if !ok {
		return ResourceRead{}, Errorf(CodeNotFound, "this link shows no app of tool call %q", Shorten(callID, 80))
	}
	res := sh.cfg.Runner.cfg.Resources
	if res == nil {
		return ResourceRead{}, errNoServer(app.Server)
	}
	owner := Principal{UserID: cmp.Or(sc.Share.Owner, LocalUser), Role: RoleMember}
	return res.ReadResource(WithPrincipal(ctx, owner), app.Server, app.URI)
}
