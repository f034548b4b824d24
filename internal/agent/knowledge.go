package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Knowledge bases (DESIGN.md §12.1): named sets of a user's files,
// private or shared with everyone, searched by hybrid retrieval (the
// database's full-text index and exact cosine over the chunks' stored
// embeddings, fused by reciprocal rank) and offered to a turn as the
// built-in file_search tool, whose passages the answer cites.
//
// Who may see what: a base is its owner's; a shared one is readable (and
// searchable) by everyone, one shared with groups by their members (the
// viewer rule of access.go, as agents), and a project's bases by the
// project's members (the project rule: those of its bases its owner may
// read); only its owner changes it; an admin reads and changes every
// base. A base the caller may not read answers not_found, and a search
// reads only the chunks of the bases it may read: the files are chosen
// before anything is ranked.

// Knowledge visibilities are agents' (agentdef.go): VisibilityPrivate,
// VisibilityShared, VisibilityGroup.

// Knowledge statuses: processing while a file of it is.
const (
	KnowledgeProcessing = "processing"
	KnowledgeReady      = "ready"
)

// Limits of knowledge.
const (
	maxKnowledgeName    = 200
	maxKnowledgeDesc    = 2000
	maxKnowledgeFiles   = 10000
	defaultPassages     = 8
	maxPassages         = 50
	maxSearchQuery      = 4000
	rrfK                = 60 // reciprocal rank fusion's constant
	searchCandidates    = 50 // how many of each ranking are fused
	maxCitations        = 16 // passages one answer cites at most
	ToolFileSearch      = "file_search"
	fileSearchToolLimit = 5
)

// Knowledge is a knowledge base.
type Knowledge struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Visibility  string          `json:"visibility"`
	Groups      []string        `json:"groups,omitempty"` // visibility "group": the groups it is shared with
	FileIDs     []string        `json:"file_ids"`
	Status      string          `json:"status"`
	Counts      KnowledgeCounts `json:"counts"`
	CreatedAt   time.Time       `json:"created_at"`
	Owner       string          `json:"-"`
}

// KnowledgeCounts counts a base's files by status.
type KnowledgeCounts struct {
	Total      int `json:"total"`
	Processing int `json:"processing"`
	Processed  int `json:"processed"`
	Failed     int `json:"failed"`
}

// KnowledgeInput creates or changes a base: nil fields stay as they are.
type KnowledgeInput struct {
	Name        *string   `json:"name"`
	Description *string   `json:"description"`
	Visibility  *string   `json:"visibility"`
	Groups      *[]string `json:"groups"`
	FileIDs     *[]string `json:"file_ids"`
}

// Passage is a search result: a chunk, the file it is of, and its score.
type Passage struct {
	FileID   string  `json:"file_id"`
	FileName string  `json:"file_name"`
	Page     int     `json:"page,omitempty"`
	Heading  string  `json:"heading,omitempty"`
	Text     string  `json:"text"`
	Score    float64 `json:"score"`
	ChunkID  int64   `json:"-"`
}

// Citation is a passage an answer used, stored on the assistant message.
type Citation struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	Page     int    `json:"page,omitempty"`
	Heading  string `json:"heading,omitempty"`
	Text     string `json:"text"`
}

// KnowledgeStore keeps knowledge bases and searches their chunks.
type KnowledgeStore interface {
	// PutKnowledge stores k (a new base, or the new state of one) with
	// its file list.
	PutKnowledge(ctx context.Context, k Knowledge) error
	// Knowledge returns a base with its file ids and counts, or not_found.
	Knowledge(ctx context.Context, id string) (Knowledge, error)
	// Knowledges lists the bases owner owns and, with shared, the shared
	// ones ("" owner: every base).
	Knowledges(ctx context.Context, owner string) ([]Knowledge, error)
	// DeleteKnowledge deletes a base (its files stay).
	DeleteKnowledge(ctx context.Context, id string) error
	// KeywordChunks ranks the processed chunks of files by full-text
	// match of query, best first, at most limit.
	KeywordChunks(ctx context.Context, files []string, query string, limit int) ([]Passage, error)
	// ConversationKnowledge returns the bases attached to a conversation.
	ConversationKnowledge(ctx context.Context, conversationID string) ([]string, error)
	// SetConversationKnowledge attaches exactly ids to a conversation.
	SetConversationKnowledge(ctx context.Context, conversationID string, ids []string) error
	// VectorChunks ranks the processed chunks of files by cosine
	// similarity to vec (unit length), best first, at most limit.
	VectorChunks(ctx context.Context, files []string, vec []float32, limit int) ([]Passage, error)
}

// viewer is ctx's principal's viewer of bases (access.go's rule).
func (fs *Files) viewer(ctx context.Context) *viewer {
	v := &viewer{ctx: ctx, scope: Scope(ctx)}
	if fs.cfg.Groups != nil {
		v.groups = fs.cfg.Groups
	}
	return v
}

// readable reports whether v's principal may read k: by the viewer rule
// (owner, shared, their groups), or as a member of a project with k whose
// owner may read k by that rule (the owner's groups as the project index
// has them).
func (fs *Files) readable(v *viewer, k Knowledge) bool {
	if v.sees(k.Visibility, k.Owner, k.Groups) {
		return true
	}
	x := fs.cfg.Projects
	for _, owner := range x.KnowledgeOwners(v.scope, k.ID) {
		mine := x.GroupsOf(owner)
		if owner == k.Owner || k.Visibility == VisibilityGroup && slices.ContainsFunc(k.Groups, func(g string) bool { return slices.Contains(mine, g) }) {
			return true
		}
	}
	return false
}

// knowledgeOf is a base the caller may read, or not_found.
func (fs *Files) knowledgeOf(ctx context.Context, id string) (Knowledge, error) {
	if _, err := fileOwner(ctx); err != nil {
		return Knowledge{}, err
	}
	k, err := fs.cfg.Store.Knowledge(ctx, id)
	if err != nil {
		return Knowledge{}, err
	}
	if !fs.readable(fs.viewer(ctx), k) {
		return Knowledge{}, Errorf(CodeNotFound, "knowledge base %q not found", Shorten(id, 80))
	}
	return k, nil
}

// ownKnowledge is a base the caller may change: not_found when they may
// not read it, forbidden when they may read it only.
func (fs *Files) ownKnowledge(ctx context.Context, id string) (Knowledge, error) {
	k, err := fs.knowledgeOf(ctx, id)
	if err != nil {
		return Knowledge{}, err
	}
	if s := Scope(ctx); s != "" && s != k.Owner {
		return Knowledge{}, Errorf(CodeForbidden, "knowledge base %s is shared with you to read; only its owner changes it", id)
	}
	return k, nil
}

// Knowledge returns a base the caller may read.
func (fs *Files) Knowledge(ctx context.Context, id string) (Knowledge, error) {
	return fs.knowledgeOf(ctx, id)
}

// Knowledges lists the bases the caller may read: their own, the shared
// ones, those of their groups and of their projects.
func (fs *Files) Knowledges(ctx context.Context) ([]Knowledge, error) {
	if _, err := fileOwner(ctx); err != nil {
		return nil, err
	}
	all, err := fs.cfg.Store.Knowledges(ctx, "")
	if err != nil {
		return nil, err
	}
	v := fs.viewer(ctx)
	out := []Knowledge{}
	for _, k := range all {
		if fs.readable(v, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// CreateKnowledge makes a base of the caller's.
func (fs *Files) CreateKnowledge(ctx context.Context, in KnowledgeInput) (Knowledge, error) {
	p := PrincipalFrom(ctx)
	if p.UserID == "" {
		return Knowledge{}, Errorf(CodeUnauthorized, "sign in to use knowledge")
	}
	k := Knowledge{ID: "vs_" + NewID(), Visibility: VisibilityPrivate, CreatedAt: fs.now().UTC(), Owner: p.UserID, FileIDs: []string{}}
	if in.Name == nil {
		in.Name = new(string)
	}
	if err := fs.applyKnowledge(ctx, &k, in); err != nil {
		return Knowledge{}, err
	}
	if err := fs.cfg.Store.PutKnowledge(ctx, k); err != nil {
		return Knowledge{}, err
	}
	return fs.cfg.Store.Knowledge(ctx, k.ID)
}

// UpdateKnowledge changes a base of the caller's.
func (fs *Files) UpdateKnowledge(ctx context.Context, id string, in KnowledgeInput) (Knowledge, error) {
	k, err := fs.ownKnowledge(ctx, id)
	if err != nil {
		return Knowledge{}, err
	}
	if err := fs.applyKnowledge(ctx, &k, in); err != nil {
		return Knowledge{}, err
	}
	if err := fs.cfg.Store.PutKnowledge(ctx, k); err != nil {
		return Knowledge{}, err
	}
	return fs.cfg.Store.Knowledge(ctx, k.ID)
}

// applyKnowledge checks in and applies it to k.
func (fs *Files) applyKnowledge(ctx context.Context, k *Knowledge, in KnowledgeInput) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if !utf8.ValidString(n) || len(n) > maxKnowledgeName {
			return Errorf(CodeBadRequest, "name must be valid UTF-8 of at most %d bytes", maxKnowledgeName)
		}
		k.Name = n
	}
	if in.Description != nil {
		if !utf8.ValidString(*in.Description) || len(*in.Description) > maxKnowledgeDesc {
			return Errorf(CodeBadRequest, "description must be valid UTF-8 of at most %d bytes", maxKnowledgeDesc)
		}
		k.Description = *in.Description
	}
	if in.Visibility != nil {
		switch *in.Visibility {
		case VisibilityPrivate, VisibilityShared, VisibilityGroup:
			k.Visibility = *in.Visibility
		default:
			return Errorf(CodeBadRequest, "visibility must be \"private\", \"shared\" or \"group\", got %q", Shorten(*in.Visibility, 40))
		}
	}
	if in.Groups != nil {
		if err := fs.checkGroups(ctx, *in.Groups); err != nil {
			return err
		}
		k.Groups = sortedIDs(*in.Groups)
	}
	if k.Visibility != VisibilityGroup {
		k.Groups = nil // shared with groups only while its visibility says so
	} else if len(k.Groups) == 0 {
		return Errorf(CodeBadRequest, "visibility \"group\" needs groups: the ids of the groups to share it with (GET /agentik/groups)")
	}
	if in.FileIDs != nil {
		if len(*in.FileIDs) > maxKnowledgeFiles {
			return Errorf(CodeBadRequest, "file_ids has %d entries; at most %d", len(*in.FileIDs), maxKnowledgeFiles)
		}
		ids := []string{}
		for i, id := range *in.FileIDs {
			if slices.Contains(ids, id) {
				continue
			}
			if err := fs.checkFileOf(ctx, k.Owner, id); err != nil {
				return Errorf(ErrorCode(err), "file_ids[%d]: %s", i, errMessage(err))
			}
			ids = append(ids, id)
		}
		k.FileIDs = ids
	}
	return nil
}

// maxKnowledgeGroups caps the groups a base is shared with.
const maxKnowledgeGroups = 32

// checkGroups checks the groups a base is shared with: each exists, and
// a member shares only with groups they are in (an admin with any), as
// for agents (checkAgentGroups).
func (fs *Files) checkGroups(ctx context.Context, ids []string) error {
	if len(ids) > maxKnowledgeGroups {
		return Errorf(CodeBadRequest, "groups has %d entries; at most %d are allowed", len(ids), maxKnowledgeGroups)
	}
	v := fs.viewer(ctx)
	for i, id := range ids {
		if fs.cfg.Groups == nil {
			return Errorf(CodeBadRequest, "groups[%d]: this server keeps no groups", i)
		}
		_, err := fs.cfg.Groups.Group(ctx, id)
		if err == nil && !v.inGroups([]string{id}) {
			err = Errorf(CodeNotFound, "no such group")
		}
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeBadRequest, "groups[%d] %q names no group of yours (GET /agentik/groups lists them)", i, Shorten(id, 60))
		}
		if err != nil {
			return fmt.Errorf("check knowledge: %w", err)
		}
	}
	return nil
}

// errMessage is an error's message without its code.
func errMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// checkFileOf checks that file id is one the caller may put in a base of
// owner's: one of the caller's (an admin's: one of owner's).
func (fs *Files) checkFileOf(ctx context.Context, owner, id string) error {
	f, err := fs.File(ctx, id)
	if err != nil {
		return err
	}
	if f.Owner != owner {
		return Errorf(CodeBadRequest, "file %s belongs to another user than the knowledge base", id)
	}
	return nil
}

// DeleteKnowledge deletes a base of the caller's (its files stay).
func (fs *Files) DeleteKnowledge(ctx context.Context, id string) error {
	if _, err := fs.ownKnowledge(ctx, id); err != nil {
		return err
	}
	return fs.cfg.Store.DeleteKnowledge(ctx, id)
}

// AddKnowledgeFile puts one of the caller's files in a base of theirs.
func (fs *Files) AddKnowledgeFile(ctx context.Context, id, fileID string) (Knowledge, error) {
	k, err := fs.ownKnowledge(ctx, id)
	if err != nil {
		return Knowledge{}, err
	}
	if err := fs.checkFileOf(ctx, k.Owner, fileID); err != nil {
		return Knowledge{}, err
	}
	if !slices.Contains(k.FileIDs, fileID) {
		k.FileIDs = append(k.FileIDs, fileID)
		if err := fs.cfg.Store.PutKnowledge(ctx, k); err != nil {
			return Knowledge{}, err
		}
	}
	return fs.cfg.Store.Knowledge(ctx, id)
}

// RemoveKnowledgeFile takes a file out of a base of the caller's.
func (fs *Files) RemoveKnowledgeFile(ctx context.Context, id, fileID string) (Knowledge, error) {
	k, err := fs.ownKnowledge(ctx, id)
	if err != nil {
		return Knowledge{}, err
	}
	i := slices.Index(k.FileIDs, fileID)
	if i < 0 {
		return Knowledge{}, Errorf(CodeNotFound, "file %q is not in knowledge base %s", Shorten(fileID, 80), id)
	}
	k.FileIDs = slices.Delete(k.FileIDs, i, i+1)
	if err := fs.cfg.Store.PutKnowledge(ctx, k); err != nil {
		return Knowledge{}, err
	}
	return fs.cfg.Store.Knowledge(ctx, id)
}

// SearchInput is a search of knowledge bases.
type SearchInput struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// Search searches the bases ids, each of which the caller must be able
// to read (else not_found): the best passages, by reciprocal rank fusion
// of the keyword and the vector rankings.
func (fs *Files) Search(ctx context.Context, ids []string, in SearchInput) ([]Passage, error) {
	return fs.searchWith(ctx, ids, nil, in)
}

// searchWith is Search over the bases ids and the files attached (the
// files a conversation's messages attach: checked as they were sent).
func (fs *Files) searchWith(ctx context.Context, ids, attached []string, in SearchInput) ([]Passage, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return nil, Errorf(CodeBadRequest, "query is required: the words or question to look for")
	}
	if len(q) > maxSearchQuery || !utf8.ValidString(q) {
		return nil, Errorf(CodeBadRequest, "query must be valid UTF-8 of at most %d bytes", maxSearchQuery)
	}
	limit := in.Limit
	if limit == 0 {
		limit = defaultPassages
	}
	if limit < 1 || limit > maxPassages {
		return nil, Errorf(CodeBadRequest, "limit must be 1 to %d, got %d", maxPassages, in.Limit)
	}
	files := slices.Clone(attached)
	for _, id := range ids {
		k, err := fs.knowledgeOf(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, f := range k.FileIDs {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return fs.searchFiles(ctx, files, q, limit)
}

// searchFiles ranks the chunks of files (chosen by the caller's access)
// for q.
func (fs *Files) searchFiles(ctx context.Context, files []string, q string, limit int) ([]Passage, error) {
	out := []Passage{}
	if len(files) == 0 {
		return out, nil
	}
	// The two rankings run side by side: the query's embedding (a
	// provider's round trip) and the cosine loop meanwhile the full-text
	// query, so a search takes the longer of them, not their sum.
	var vec []Passage
	var wg sync.WaitGroup
	if fs.cfg.Embedder != nil {
		wg.Go(func() {
			vs, err := fs.cfg.Embedder.Embed(ctx, []string{q})
			if err == nil && len(vs) == 1 {
				vec, err = fs.cfg.Store.VectorChunks(ctx, files, normalize(vs[0]), searchCandidates)
			}
			if err != nil { // the keyword ranking still answers
				fs.log.Warn("knowledge_vector_search", "err", err)
				vec = nil
			}
		})
	}
	kw, err := fs.cfg.Store.KeywordChunks(ctx, files, q, searchCandidates)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("knowledge search: %w", err)
	}
	return fuse(limit, kw, vec), nil
}

// fuse merges rankings by reciprocal rank fusion: a passage scores the
// sum of 1/(rrfK+rank) over the rankings it is in.
func fuse(limit int, rankings ...[]Passage) []Passage {
	byID := map[int64]*Passage{}
	var order []int64
	for _, r := range rankings {
		for i, p := range r {
			s := 1 / float64(rrfK+i+1)
			if q, ok := byID[p.ChunkID]; ok {
				q.Score += s
				continue
			}
			p.Score = s
			byID[p.ChunkID] = &p
			order = append(order, p.ChunkID)
		}
	}
	out := make([]Passage, 0, len(order))
	for _, id := range order {
		p := *byID[id]
		p.Score = math.Round(p.Score*1e6) / 1e6
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// normalize scales v to unit length (cosine is then a dot product).
func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

// The turn's side: file_search over the knowledge the turn may use.

// fileSearchParams is file_search's schema.
var fileSearchParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for in the attached documents: a question or key words"}},"required":["query"]}`)

// knowledgeIDs are the bases the turn searches: the request's (a
// Responses file_search tool's vector_store_ids), the conversation's and
// its agent's.
func (t *turn) knowledgeIDs() []string {
	if t.r.cfg.Files == nil {
		return nil
	}
	if t.convKnowledge == nil {
		t.convKnowledge = []string{}
		attached, err := t.r.cfg.Files.cfg.Store.ConversationKnowledge(context.WithoutCancel(t.ctx), t.conv.ID)
		if err != nil {
			t.r.log.Warn("conversation_knowledge_unreadable", "conversation_id", t.conv.ID, "err", err)
		}
		t.convKnowledge = append(t.convKnowledge, attached...)
	}
	ids := slices.Clone(t.knowledge)
	for _, id := range slices.Concat(t.convKnowledge, t.agent.Knowledge, t.project.Knowledge) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// maxConversationKnowledge caps the bases attached to a conversation.
const maxConversationKnowledge = 32

// conversationKnowledge returns the bases attached to conversation id.
func (r *Runner) conversationKnowledge(ctx context.Context, id string) ([]string, error) {
	if err := r.readAccess(ctx, id); err != nil {
		return nil, err
	}
	if r.cfg.Files == nil {
		return []string{}, nil
	}
	ids, err := r.cfg.Files.cfg.Store.ConversationKnowledge(ctx, id)
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}

// setConversationKnowledge attaches exactly ids to conversation id (its
// turns offer file_search over them); each one the caller may read.
func (r *Runner) setConversationKnowledge(ctx context.Context, id string, ids []string) error {
	if err := r.access(ctx, id); err != nil {
		return err
	}
	if err := r.checkConversationKnowledge(ctx, ids); err != nil {
		return err
	}
	return r.cfg.Files.cfg.Store.SetConversationKnowledge(ctx, id, slices.Compact(slices.Clone(ids)))
}

// checkConversationKnowledge checks bases to attach to a conversation
// before anything is written.
func (r *Runner) checkConversationKnowledge(ctx context.Context, ids []string) error {
	if len(ids) > maxConversationKnowledge {
		return Errorf(CodeBadRequest, "knowledge has %d entries; at most %d are allowed", len(ids), maxConversationKnowledge)
	}
	if len(ids) > 0 && r.cfg.Files == nil {
		return Errorf(CodeBadRequest, "knowledge: this server keeps no knowledge bases")
	}
	for i, kid := range ids {
		if _, err := r.cfg.Files.Knowledge(ctx, kid); err != nil {
			return Errorf(ErrorCode(err), "knowledge[%d]: %s", i, errMessage(err))
		}
	}
	return nil
}

// forgetKnowledge drops a deleted conversation's attachments.
func (r *Runner) forgetKnowledge(ctx context.Context, id string) {
	if r.cfg.Files == nil {
		return
	}
	if err := r.cfg.Files.cfg.Store.SetConversationKnowledge(context.WithoutCancel(ctx), id, nil); err != nil {
		r.log.Warn("conversation_knowledge_forget", "conversation_id", id, "err", err)
	}
}

// fileSearchSpec is file_search when the turn has knowledge and its agent
// allows the tool.
func (t *turn) fileSearchSpec() []ToolSpec {
	if t.r.cfg.Files == nil || (len(t.files) == 0 && len(t.knowledgeIDs()) == 0) || !t.allows(ToolFileSearch) {
		return nil
	}
	return []ToolSpec{{Name: ToolFileSearch, Description: "Search the documents attached to this conversation (its messages' files and knowledge bases) and answer with the best passages, each with the file and page it is from. Cite them in your answer.", Parameters: fileSearchParams}}
}

// callFileSearch answers a file_search call with numbered passages, as
// the conversation's owner sees them, and keeps them as the turn's
// citations.
func (t *turn) callFileSearch(c ToolCall) Message {
	m := Message{Type: MessageToolResult, ConversationID: t.conv.ID, CallID: c.ID, Name: c.Name}
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || strings.TrimSpace(args.Query) == "" {
		m.Result, m.IsError = `file_search takes {"query": "…"}: a question or key words`, true
		return m
	}
	owner := OwnerOf(t.conv)
	who := Principal{UserID: owner, Role: RoleMember}
	if owner == LocalUser {
		who = Local
	}
	ctx := WithPrincipal(context.WithoutCancel(t.ctx), who)
	t.r.cfg.Files.waitProcessed(t.ctx, t.files) // filepart.go: a document just attached
	ps, err := t.r.cfg.Files.searchWith(ctx, t.r.cfg.Files.readableOf(ctx, t.knowledgeIDs()), t.files, SearchInput{Query: args.Query, Limit: fileSearchToolLimit})
	if err != nil {
		m.Result, m.IsError = "file_search failed: "+errMessage(err), true
		return m
	}
	if len(ps) == 0 {
		m.Result = "no passage of the attached documents matches " + quote(args.Query)
		return m
	}
	var b strings.Builder
	for _, p := range ps {
		n := t.cite(p)
		fmt.Fprintf(&b, "[%d] %s", n, p.FileName)
		if p.Page > 0 {
			fmt.Fprintf(&b, ", page %d", p.Page)
		}
		if p.Heading != "" {
			fmt.Fprintf(&b, ", %q", p.Heading)
		}
		fmt.Fprintf(&b, ":\n%s\n\n", p.Text)
	}
	m.Result = strings.TrimSpace(b.String())
	return m
}

// cite adds p to the turn's citations (once) and returns its number.
func (t *turn) cite(p Passage) int {
	c := Citation{FileID: p.FileID, FileName: p.FileName, Page: p.Page, Heading: p.Heading, Text: p.Text}
	if i := slices.Index(t.citations, c); i >= 0 {
		return i + 1
	}
	if len(t.citations) < maxCitations {
		t.citations = append(t.citations, c)
	}
	return len(t.citations)
}

// maxAgentKnowledge caps the bases of one agent.
const maxAgentKnowledge = 32

// checkAgentKnowledge checks an agent's knowledge: bases its editor may
// read (an agent defined as code names any).
func (r *Runner) checkAgentKnowledge(ctx context.Context, d AgentDef) error {
	if len(d.Knowledge) == 0 {
		return nil
	}
	if len(d.Knowledge) > maxAgentKnowledge {
		return Errorf(CodeBadRequest, "knowledge has %d entries; at most %d are allowed", len(d.Knowledge), maxAgentKnowledge)
	}
	if r.cfg.Files == nil {
		return Errorf(CodeBadRequest, "knowledge: this server keeps no knowledge bases")
	}
	if d.ReadOnly {
		return nil
	}
	for i, id := range d.Knowledge {
		if _, err := r.cfg.Files.Knowledge(ctx, id); err != nil {
			return Errorf(ErrorCode(err), "knowledge[%d]: %s", i, errMessage(err))
		}
	}
	return nil
}

// CheckKnowledge checks bases a request attaches (a Responses
// file_search tool's vector_store_ids): each one the caller may read.
func (r *Runner) CheckKnowledge(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if r.cfg.Files == nil {
		return Errorf(CodeUnavailable, "this server keeps no knowledge bases")
	}
	for _, id := range ids {
		if _, err := r.cfg.Files.Knowledge(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// readableOf is the bases of ids that ctx's principal may read; the
// others are left out (an agent's base its owner made private).
func (fs *Files) readableOf(ctx context.Context, ids []string) []string {
	var out []string
	for _, id := range ids {
		if _, err := fs.knowledgeOf(ctx, id); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// KnowledgeFile is file id of base k (which the caller read with
// Knowledge): not_found unless the base holds it.
func (fs *Files) KnowledgeFile(ctx context.Context, k Knowledge, id string) (File, error) {
	if !slices.Contains(k.FileIDs, id) {
		return File{}, Errorf(CodeNotFound, "file %q is not in knowledge base %s", Shorten(id, 80), k.ID)
	}
	return fs.cfg.Store.File(ctx, "", id)
}
