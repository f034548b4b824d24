package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// The search index (see doc.go, "Search"): one search_doc row per
// conversation title and per user or assistant message with text, kept in
// the transaction that writes what it indexes, and a full-text index over
// it: an FTS5 table on SQLite, a generated tsvector with a GIN index on
// PostgreSQL.

// searchBodyMax caps the indexed bytes of one message: PostgreSQL refuses a
// tsvector over 1 MB, and words past the first pages of a message add little
// to finding its conversation.
const searchBodyMax = 64 << 10

// searchWindow is how many of the newest message matches a search ranks.
// Ranking every match of a very common word costs a score per message
// (about half a second for 100,000 on SQLite, measured); the newest
// matches hold what a search box is for, and a query that matches more
// than this many messages is refined by another word.
const searchWindow = 500

// snippetWords is about how many words a snippet shows.
const snippetWords = 16

// markOpen and markClose delimit matches inside the database's snippet;
// they are removed from indexed text, so only the database puts them there.
const (
	markOpen  = "\x02"
	markClose = "\x03"
)

// searchVersion names the index's shape; a database whose meta row
// search_indexed differs is reindexed at Open.
const searchVersion = "1"

// metaSearchIndexed is the meta key holding searchVersion once the rows
// that existed before the index are indexed.
const metaSearchIndexed = "search_indexed"

// searchRow is one indexed text: a title (MessageID "") or a message's.
type searchRow struct {
	ID             int64            `gorm:"primaryKey"`
	ConversationID string           `gorm:"not null;index"`
	Conversation   *conversationRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	MessageID      string           `gorm:"not null;default:''"`
	Date           *time.Time       // the message's; nil for a title
	Title          string           `gorm:"type:text;not null;default:''"`
	Body           string           `gorm:"type:text;not null;default:''"`
}

func (searchRow) TableName() string { return "search_doc" }

// sqliteSearchDDL makes two FTS5 indexes over search_doc (external
// content: the text is stored once): titles and message texts apart, so a
// search of titles never walks the long lists of message matches.
// Triggers keep them in step, deletes by the foreign key's cascade
// included (an empty column adds nothing to an index); message texts reach
// search_body just after their commit (searchlater.go: sqliteBodyTriggers).
var sqliteSearchDDL = []string{
	`CREATE VIRTUAL TABLE IF NOT EXISTS search_title USING fts5(title, content='search_doc', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='3')`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS search_body USING fts5(body, content='search_doc', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='3')`,
}

// postgresSearchDDL makes the weighted tsvector (title A, body B) and its
// GIN index. The 'simple' configuration lowercases without stemming, so
// every language is searched alike.
var postgresSearchDDL = []string{
	`ALTER TABLE search_doc ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED ALWAYS AS
		(setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', body), 'B')) STORED`,
	`CREATE INDEX IF NOT EXISTS idx_search_doc_tsv ON search_doc USING GIN (tsv)`,
}

// migrateSearch creates the full-text index and, once per database,
// indexes the conversations and messages stored before it existed. It runs
// inside Open's migration (on PostgreSQL under the migration lock).
func migrateSearch(tx *gorm.DB, postgres bool) error {
	ddl := sqliteSearchDDL
	if postgres {
		ddl = postgresSearchDDL
	}
	for _, q := range ddl {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	if !postgres {
		if err := migrateBodyMark(tx); err != nil { // searchlater.go
			return err
		}
	}
	var done []string
	if err := tx.Model(&metaRow{}).Where("key = ?", metaSearchIndexed).Pluck("value", &done).Error; err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	if len(done) == 1 && done[0] == searchVersion {
		return nil
	}
	return tx.Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("1 = 1").Delete(&searchRow{}).Error; err != nil {
			return fmt.Errorf("search index: clear: %w", err)
		}
		if err := tx.Exec("INSERT INTO search_doc (conversation_id, message_id, title, body) SELECT id, '', title, '' FROM conversation").Error; err != nil {
			return fmt.Errorf("search index: titles: %w", err)
		}
		var after int64
		for {
			var rows []messageRow
			if err := tx.Where("seq > ? AND type IN ?", after, []string{agent.MessageUser, agent.MessageAssistant}).
				Order("seq").Limit(1000).Find(&rows).Error; err != nil {
				return fmt.Errorf("search index: messages: %w", err)
			}
			if len(rows) == 0 {
				break
			}
			docs := make([]searchRow, 0, len(rows))
			for _, r := range rows {
				after = r.Seq
				var m agent.Message
				if err := json.Unmarshal([]byte(r.Payload), &m); err != nil {
					return fmt.Errorf("search index: message %s: decode: %w", r.ID, err)
				}
				if d, ok := messageDoc(&m); ok {
					docs = append(docs, d)
				}
			}
			if len(docs) > 0 {
				if err := tx.CreateInBatches(docs, insertChunk).Error; err != nil {
					return fmt.Errorf("search index: messages: %w", err)
				}
			}
		}
		return tx.Save(&metaRow{Key: metaSearchIndexed, Value: searchVersion}).Error
	})
}

// indexText is s cleaned for the index: at most searchBodyMax bytes (cut at
// a rune), without the snippet markers.
func indexText(s string) string {
	if len(s) > searchBodyMax {
		cut := searchBodyMax
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if strings.ContainsAny(s, markOpen+markClose+"\x00") {
		s = strings.NewReplacer(markOpen, " ", markClose, " ", "\x00", " ").Replace(s) // PostgreSQL's text refuses NUL
	}
	return s
}

// messageDoc is the index row of m, if m has searchable text.
func messageDoc(m *agent.Message) (searchRow, bool) {
	text := agent.MessageText(*m)
	if strings.TrimSpace(text) == "" {
		return searchRow{}, false
	}
	d := m.Date.UTC().Truncate(time.Microsecond)
	return searchRow{ConversationID: m.ConversationID, MessageID: m.ID, Date: &d, Body: indexText(text)}, true
}

// indexRecord keeps the index in step with what applyRows wrote for rec:
// a created conversation's title, a rename, a message's text. A deleted
// conversation's rows go with it (the foreign key cascades). With ids
// (SQLite), doc is the id of the row it inserted (0: none).
func indexRecord(tx *gorm.DB, rec *agent.Record, ids bool) (doc int64, err error) {
	var res sql.Result
	ev := &rec.Event
	if a := ev.Agent; a != nil {
		switch a.Type {
		case agent.AgentCreated:
			title := a.Title
			if rec.Conversation != nil {
				title = rec.Conversation.Title
			}
			if res, err = rawExec(tx, "INSERT INTO search_doc (conversation_id, message_id, title, body) VALUES (?,'',?,'')", ev.ConversationID, indexText(title)); err != nil {
				return 0, fmt.Errorf("index title of %s: %w", ev.ConversationID, err)
			}
		case agent.AgentRenamed:
			if _, err := rawExec(tx, "UPDATE search_doc SET title = ? WHERE conversation_id = ? AND message_id = ''", indexText(a.Title), ev.ConversationID); err != nil {
				return 0, fmt.Errorf("index title of %s: %w", ev.ConversationID, err)
			}
		}
	}
	if e := ev.Event; e != nil && e.Type == agent.EventMessage && e.Message != nil {
		if d, ok := messageDoc(e.Message); ok {
			if res, err = rawExec(tx, "INSERT INTO search_doc (conversation_id, message_id, date, body) VALUES (?,?,?,?)", d.ConversationID, d.MessageID, *d.Date, d.Body); err != nil {
				return 0, fmt.Errorf("index message %s: %w", e.Message.ID, err)
			}
		}
	}
	if res != nil && ids {
		if doc, err = res.LastInsertId(); err != nil {
			return 0, fmt.Errorf("index: %w", err)
		}
	}
	return doc, nil
}

var _ agent.Searcher = (*Store)(nil)

// Search returns the conversations whose title, or one of whose user and
// assistant messages, contains every term of q (the last as a prefix when
// q.Prefix), one per conversation with its best match, at most q.Limit:
// first the conversations whose title matches, then those whose messages
// do, each group best first (bm25 on SQLite, ts_rank on PostgreSQL).
// Message matches are ranked among the searchWindow newest ones.
func (s *Store) Search(ctx context.Context, q agent.SearchQuery) ([]agent.SearchResult, error) {
	if len(q.Terms) == 0 {
		return []agent.SearchResult{}, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = agent.DefaultSearchLimit
	}
	var (
		hits []searchHit
		err  error
	)
	if s.postgres {
		hits, err = s.searchPostgres(ctx, q, limit)
	} else if err = s.bodiesIndexed(ctx); err == nil { // what was answered before is found (searchlater.go)
		hits, err = s.searchSQLite(ctx, q, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	out := make([]agent.SearchResult, len(hits))
	for i, h := range hits {
		date := h.UpdatedAt
		if h.Date != nil {
			date = *h.Date
		}
		out[i] = agent.SearchResult{
			ConversationID: h.ConversationID, Title: h.ConvTitle, MessageID: h.MessageID,
			Snippet: markSnippet(h.Snippet), Date: date.UTC(),
		}
	}
	return out, nil
}

// searchHit is one row of a search query.
type searchHit struct {
	ID             int64
	ConversationID string
	MessageID      string
	Date           *time.Time
	ConvTitle      string
	UpdatedAt      time.Time
	Snippet        string
}

// markSnippet escapes a database snippet for HTML and turns its markers
// into agent.MarkStart/MarkEnd.
func markSnippet(s string) string {
	s = html.EscapeString(s)
	return strings.NewReplacer(markOpen, agent.MarkStart, markClose, agent.MarkEnd).Replace(s)
}

// ftsMatch is q as an FTS5 query: every term quoted (a quote inside doubled,
// though terms hold only letters, digits and marks), implicitly ANDed.
func ftsMatch(q agent.SearchQuery) string {
	var b strings.Builder
	for i, t := range q.Terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(`"` + strings.ReplaceAll(t, `"`, `""`) + `"`)
		if q.Prefix && i == len(q.Terms)-1 {
			b.WriteByte('*')
		}
	}
	return b.String()
}

func (s *Store) searchSQLite(ctx context.Context, q agent.SearchQuery, limit int) ([]searchHit, error) {
	match := ftsMatch(q)
	db := s.r.WithContext(ctx)
	// Titles: one row per conversation, so all their matches are ranked.
	var titles []searchHit
	own, ownArgs := ownerClause(q.Owner, q.Projects) // a member's search: their own conversations (and their projects') only
	if err := db.Raw(`SELECT f.rowid AS id, d.conversation_id, d.message_id, d.date, c.title AS conv_title, c.updated_at,
			snippet(search_title, 0, ?, ?, '…', ?) AS snippet
		FROM search_title f JOIN search_doc d ON d.id = f.rowid JOIN conversation c ON c.id = d.conversation_id
		WHERE search_title MATCH ?`+own+` ORDER BY bm25(search_title), f.rowid LIMIT ?`,
		append(append([]any{markOpen, markClose, snippetWords, match}, ownArgs...), limit)...).Scan(&titles).Error; err != nil {
		return nil, err
	}
	if len(titles) == limit {
		return titles, nil
	}
	// Messages: the best of each other conversation among the newest
	// searchWindow matches (rowids grow with time), then snippets for the
	// few rows shown only (a snippet reads the text).
	seen := make([]string, 0, len(titles)+1)
	seen = append(seen, "")
	for _, t := range titles {
		seen = append(seen, t.ConversationID)
	}
	// The window, ranked, in one pass over the matches (FTS5 serves the
	// rowid order and stops at the limit); ranked apart from the join:
	// SQLite's planner, given both, scores every match instead of the
	// window (measured: 200 ms against 2 ms).
	var ranked []struct {
		ID int64
		R  float64
	}
	window := db.Raw(`SELECT rowid AS id, bm25(search_body) AS r FROM search_body WHERE search_body MATCH ? ORDER BY rowid DESC LIMIT ?`,
		match, searchWindow)
	if q.Owner != "" {
		// The window of a member's own matches (the newest matches of all
		// could be everyone else's).
		window = db.Raw(`SELECT f.rowid AS id, bm25(search_body) AS r FROM search_body f
			JOIN search_doc d ON d.id = f.rowid JOIN conversation c ON c.id = d.conversation_id
			WHERE search_body MATCH ?`+own+` ORDER BY f.rowid DESC LIMIT ?`, append(append([]any{match}, ownArgs...), searchWindow)...)
	}
	if err := window.Scan(&ranked).Error; err != nil {
		return nil, err
	}
	if len(ranked) == 0 {
		return titles, nil
	}
	rank := make(map[int64]float64, len(ranked))
	winIDs := make([]int64, len(ranked))
	for i, h := range ranked {
		rank[h.ID], winIDs[i] = h.R, h.ID
	}
	var owners []struct {
		ID             int64
		ConversationID string
	}
	if err := db.Raw(`SELECT id, conversation_id FROM search_doc WHERE id IN ? AND conversation_id NOT IN ?`,
		winIDs, seen).Scan(&owners).Error; err != nil {
		return nil, err
	}
	bestOf := map[string]int64{}
	for _, o := range owners {
		b, ok := bestOf[o.ConversationID]
		if !ok || rank[o.ID] < rank[b] || (rank[o.ID] == rank[b] && o.ID < b) {
			bestOf[o.ConversationID] = o.ID
		}
	}
	best := make([]int64, 0, len(bestOf))
	for _, id := range bestOf {
		best = append(best, id)
	}
	slices.SortFunc(best, func(a, b int64) int {
		if c := cmp.Compare(rank[a], rank[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	best = best[:min(len(best), limit-len(titles))]
	if len(best) == 0 {
		return titles, nil
	}
	// Snippets made here from the text: FTS5's snippet() evaluates the
	// query again for each row (measured: 2 ms a row for two common words).
	var msgs []searchHit
	if err := db.Raw(`SELECT d.id, d.conversation_id, d.message_id, d.date, c.title AS conv_title, c.updated_at, d.body AS snippet
		FROM search_doc d JOIN conversation c ON c.id = d.conversation_id WHERE d.id IN ?`, best).Scan(&msgs).Error; err != nil {
		return nil, err
	}
	msgs = inOrder(best, msgs)
	for i := range msgs {
		msgs[i].Snippet = snippet(msgs[i].Snippet, q, snippetWords)
	}
	return append(titles, msgs...), nil
}

// tsQuery is q as a to_tsquery text: the terms ANDed, the last with :*
// when a prefix. Terms hold only letters, digits and marks, so none is
// tsquery syntax; each is still quoted as a lexeme.
func tsQuery(q agent.SearchQuery) string {
	parts := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		parts[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
		if q.Prefix && i == len(q.Terms)-1 {
			parts[i] += ":*"
		}
	}
	return strings.Join(parts, " & ")
}

func (s *Store) searchPostgres(ctx context.Context, q agent.SearchQuery, limit int) ([]searchHit, error) {
	tq := tsQuery(q)
	opts := fmt.Sprintf("StartSel=%s, StopSel=%s, MaxWords=%d, MinWords=%d, MaxFragments=1, FragmentDelimiter=\" … \"",
		markOpen, markClose, snippetWords, snippetWords/2)
	var hits []searchHit
	ownDoc, args := "", []any{tq, searchWindow, limit, opts}
	if q.Owner != "" {
		// A member's search: their own conversations only.
		w, wargs := reachWhere("", q.Owner, q.Projects)
		ownDoc = " AND d.conversation_id IN (SELECT id FROM conversation WHERE " + w + ")"
		args = append(append(append(append([]any{tq}, wargs...), wargs...), searchWindow), limit, opts)
	}
	// Titles first, then each other conversation's best message among the
	// newest searchWindow message matches; headlines for the rows shown.
	err := s.r.WithContext(ctx).Raw(`WITH q AS (SELECT to_tsquery('simple', ?) AS q),
		titles AS (
			SELECT d.id, d.conversation_id, 0 AS g, ts_rank(d.tsv, q.q) AS r
			FROM search_doc d, q WHERE d.tsv @@ q.q AND d.message_id = ''`+ownDoc+`
		),
		recent AS (
			SELECT d.id, d.conversation_id, d.tsv FROM search_doc d, q
			WHERE d.tsv @@ q.q AND d.message_id <> ''`+ownDoc+` ORDER BY d.id DESC LIMIT ?
		),
		msgs AS (
			SELECT DISTINCT ON (m.conversation_id) m.id, m.conversation_id, 1 AS g, ts_rank(m.tsv, q.q) AS r
			FROM recent m, q WHERE m.conversation_id NOT IN (SELECT conversation_id FROM titles)
			ORDER BY m.conversation_id, ts_rank(m.tsv, q.q) DESC, m.id
		),
		top AS (SELECT id, g, r FROM (SELECT * FROM titles UNION ALL SELECT * FROM msgs) a ORDER BY g, r DESC, id LIMIT ?)
		SELECT d.id, d.conversation_id, d.message_id, d.date, c.title AS conv_title, c.updated_at,
			ts_headline('simple', CASE WHEN d.message_id = '' THEN d.title ELSE d.body END, q.q, ?) AS snippet
		FROM top JOIN search_doc d ON d.id = top.id JOIN conversation c ON c.id = d.conversation_id, q
		ORDER BY top.g, top.r DESC, top.id`, args...).Scan(&hits).Error
	return hits, err
}

// inOrder returns hits in the order of ids (hits of rows deleted meanwhile
// are missing).
func inOrder(ids []int64, hits []searchHit) []searchHit {
	by := make(map[int64]searchHit, len(hits))
	for _, h := range hits {
		by[h.ID] = h
	}
	out := make([]searchHit, 0, len(ids))
	for _, id := range ids {
		if h, ok := by[id]; ok {
			out = append(out, h)
		}
	}
	return out
}

// snippet cuts about n words of text around the first word that matches
// q, between markOpen and markClose every word that matches (a word
// equal to a term, or beginning with the last term when q.Prefix), with
// "…" where text is cut. Words are split as agent.ParseSearch splits them.
func snippet(text string, q agent.SearchQuery, n int) string {
	type span struct{ from, to int }
	var words []span
	start := -1
	for i, r := range text {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			words, start = append(words, span{start, i}), -1
		}
	}
	if start >= 0 {
		words = append(words, span{start, len(text)})
	}
	matches := func(w string) bool {
		w = strings.ToLower(w)
		for i, t := range q.Terms {
			if w == t || (q.Prefix && i == len(q.Terms)-1 && strings.HasPrefix(w, t)) {
				return true
			}
		}
		return false
	}
	hit := make([]bool, len(words))
	first := -1
	for i, w := range words {
		hit[i] = matches(text[w.from:w.to])
		if hit[i] && first < 0 {
			first = i
		}
	}
	lo := max(0, first-n/4)
	if first < 0 {
		lo = 0
	}
	hi := min(len(words), lo+n)
	var b strings.Builder
	if len(words) == 0 {
		return ""
	}
	from := words[lo].from
	if lo > 0 {
		b.WriteString("…")
	} else {
		from = 0
	}
	to := len(text)
	if hi < len(words) {
		to = words[hi-1].to
	}
	pos := from
	for i := lo; i < hi; i++ {
		if !hit[i] {
			continue
		}
		b.WriteString(text[pos:words[i].from])
		b.WriteString(markOpen + text[words[i].from:words[i].to] + markClose)
		pos = words[i].to
	}
	b.WriteString(text[pos:to])
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}

// ownerClause narrows a query joined with conversation c to owner's
// conversations and those of projects ("" for everyone's): the member's
// reach (agent/access.go).
func ownerClause(owner string, projects []string) (string, []any) {
	if owner == "" {
		return "", nil
	}
	w, args := reachWhere("c.", owner, projects)
	return " AND " + w, args
}

// reachWhere is the condition on a conversation row (its columns named
// with prefix) that it is owner's or in one of projects: the SQL of the
// owner and project rules (agent/access.go), for every reader of many.
func reachWhere(prefix, owner string, projects []string) (string, []any) {
	if len(projects) == 0 {
		return prefix + "owner = ?", []any{owner}
	}
	args := make([]any, 0, len(projects)+1)
	args = append(args, owner)
	for _, p := range projects {
		args = append(args, p)
	}
	return "(" + prefix + "owner = ? OR " + prefix + "project IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(projects)), ", ") + "))", args
}
