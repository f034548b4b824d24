package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentik/agentik/internal/agent"
)

// Files and knowledge bases (agent/file.go, agent/knowledge.go): ordinary
// side tables, each change in a transaction of its own (outside the event
// log's writer mechanics). A file's bytes are a row of file_blob (the
// backup is still the database); its chunks, file_chunk, are written all
// at once with the file's new status (FinishFile), so a search never sees
// half a file. The full-text index over chunks is an FTS5 table on
// SQLite, a generated tsvector with a GIN index on PostgreSQL; vectors
// are little-endian float32 bytes, compared by exact cosine in Go.

var _ agent.FileStore = (*Store)(nil)

// fileRow is a file without its bytes.
type fileRow struct {
	ID        string `gorm:"primaryKey"`
	Owner     string `gorm:"not null;uniqueIndex:idx_stored_file_sha,priority:1"`
	SHA256    string `gorm:"column:sha256;not null;uniqueIndex:idx_stored_file_sha,priority:2"`
	Name      string `gorm:"not null"`
	MediaType string `gorm:"not null"`
	Bytes     int64  `gorm:"not null"`
	Status    string `gorm:"not null;index"`
	Error     string `gorm:"not null;default:''"`
	Chunks    int    `gorm:"not null;default:0"`
	CreatedAt int64  `gorm:"not null;autoCreateTime:false"` // unix nanoseconds
}

func (fileRow) TableName() string { return "stored_file" }

// fileBlobRow is a file's bytes.
type fileBlobRow struct {
	FileID string `gorm:"primaryKey"`
	Data   []byte `gorm:"not null"`
}

func (fileBlobRow) TableName() string { return "file_blob" }

// chunkRow is one passage of a processed file.
type chunkRow struct {
	ID      int64  `gorm:"primaryKey"`
	FileID  string `gorm:"not null;index"`
	Ord     int    `gorm:"not null"`
	Page    int    `gorm:"not null;default:0"`
	Heading string `gorm:"type:text;not null;default:''"`
	Text    string `gorm:"type:text;not null"`
	Vector  []byte // little-endian float32s; NULL without embeddings
}

func (chunkRow) TableName() string { return "file_chunk" }

// knowledgeRow is a knowledge base.
type knowledgeRow struct {
	ID          string `gorm:"primaryKey"`
	Owner       string `gorm:"not null;index"`
	Name        string `gorm:"not null"`
	Description string `gorm:"not null;default:''"`
	Visibility  string `gorm:"not null"`
	// Groups are the ids of the groups a base of visibility "group" is
	// shared with, space-separated (a column added to the table: an old
	// database migrates with '' for every base).
	Groups    string `gorm:"column:share_groups;not null;default:''"`
	CreatedAt int64  `gorm:"not null;autoCreateTime:false"`
}

func (knowledgeRow) TableName() string { return "knowledge_base" }

// knowledgeFileRow puts a file in a base.
type knowledgeFileRow struct {
	KnowledgeID string `gorm:"primaryKey"`
	FileID      string `gorm:"primaryKey;index"`
	Position    int    `gorm:"not null"`
}

func (knowledgeFileRow) TableName() string { return "knowledge_file" }

// conversationKnowledgeRow attaches a base to a conversation.
type conversationKnowledgeRow struct {
	ConversationID string `gorm:"primaryKey"`
	KnowledgeID    string `gorm:"primaryKey"`
	Position       int    `gorm:"not null"`
}

func (conversationKnowledgeRow) TableName() string { return "conversation_knowledge" }

// fileTables are init's migration of files and knowledge.
var fileTables = []any{&fileRow{}, &fileBlobRow{}, &chunkRow{}, &knowledgeRow{}, &knowledgeFileRow{}, &conversationKnowledgeRow{}}

// ConversationKnowledge implements agent.KnowledgeStore.
func (s *Store) ConversationKnowledge(ctx context.Context, conversationID string) ([]string, error) {
	var ids []string
	if err := s.r.WithContext(ctx).Model(&conversationKnowledgeRow{}).Where("conversation_id = ?", conversationID).
		Order("position").Pluck("knowledge_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("store: conversation knowledge: %w", err)
	}
	return ids, nil
}

// SetConversationKnowledge implements agent.KnowledgeStore.
func (s *Store) SetConversationKnowledge(ctx context.Context, conversationID string, ids []string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("conversation_id = ?", conversationID).Delete(&conversationKnowledgeRow{}).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		rows := make([]conversationKnowledgeRow, len(ids))
		for i, id := range ids {
			rows[i] = conversationKnowledgeRow{ConversationID: conversationID, KnowledgeID: id, Position: i}
		}
		return tx.Create(&rows).Error
	})
	if err != nil {
		return fmt.Errorf("store: set conversation knowledge: %w", err)
	}
	return nil
}

// sqliteChunkDDL: an FTS5 index over file_chunk (external content),
// kept in step by triggers.
var sqliteChunkDDL = []string{
	`CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5(heading, text, content='file_chunk', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`,
	`CREATE TRIGGER IF NOT EXISTS file_chunk_ai AFTER INSERT ON file_chunk BEGIN
		INSERT INTO chunk_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text); END`,
	`CREATE TRIGGER IF NOT EXISTS file_chunk_ad AFTER DELETE ON file_chunk BEGIN
		INSERT INTO chunk_fts(chunk_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text); END`,
}

// postgresChunkDDL: a tsvector of heading and text, and its GIN index.
var postgresChunkDDL = []string{
	`ALTER TABLE file_chunk ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED ALWAYS AS
		(setweight(to_tsvector('simple', heading), 'A') || setweight(to_tsvector('simple', text), 'B')) STORED`,
	`CREATE INDEX IF NOT EXISTS idx_file_chunk_tsv ON file_chunk USING GIN (tsv)`,
}

// postgresChunkStorage keeps a chunk's tsvector in its row: the keyword
// query ranks every match by ts_rank over it, and a tsvector of a chunk
// (about 2 kB) otherwise went to the TOAST table (the row over its 2 kB
// target), a look-up of its own for each match, twice the bare index
// scan's buffers at 100k chunks (docs/BENCHMARKS.md, knowledge search).
// The vector (3 kB of floats, which do not compress) leaves the row
// uncompressed, and the text, compressed, after it: both are read for a
// result's few rows only. It holds for rows written after it (an older
// database's rows keep their layout: the query is the same, slower).
const postgresChunkStorage = `ALTER TABLE file_chunk ALTER COLUMN tsv SET STORAGE MAIN, ALTER COLUMN vector SET STORAGE EXTERNAL`

// migrateFiles makes the chunks' full-text index (the tables of files are
// in migratedTables).
func migrateFiles(tx *gorm.DB, postgres bool) error {
	ddl := sqliteChunkDDL
	if postgres {
		ddl = postgresChunkDDL
	}
	for _, q := range ddl {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("chunk index: %w", err)
		}
	}
	if postgres {
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM pg_attribute WHERE attrelid = 'file_chunk'::regclass
			AND ((attname = 'tsv' AND attstorage <> 'm') OR (attname = 'vector' AND attstorage <> 'e'))`).Scan(&n).Error; err != nil {
			return fmt.Errorf("chunk storage: %w", err)
		}
		if n > 0 {
			if err := tx.Exec(postgresChunkStorage).Error; err != nil {
				return fmt.Errorf("chunk storage: %w", err)
			}
		}
	}
	return nil
}

func (r fileRow) file() agent.File {
	return agent.File{ID: r.ID, Name: r.Name, MediaType: r.MediaType, Bytes: r.Bytes, SHA256: r.SHA256, Status: r.Status, Error: r.Error,
		Chunks: r.Chunks, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), Owner: r.Owner}
}

// fileNotFound is the not_found of a file id.
func fileNotFound(id string) error {
	return agent.Errorf(agent.CodeNotFound, "file %q not found", agent.Shorten(id, 80))
}

// PutFile implements agent.FileStore.
func (s *Store) PutFile(ctx context.Context, f agent.File, data []byte, maxTotal int64) (agent.File, bool, error) {
	if err := checkText("name", f.Name); err != nil {
		return agent.File{}, false, err
	}
	var (
		out agent.File
		dup bool
	)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old fileRow
		err := tx.Where("owner = ? AND sha256 = ?", f.Owner, f.SHA256).Take(&old).Error
		if err == nil {
			out, dup = old.file(), true
			return nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		var total int64
		if err := tx.Model(&fileRow{}).Where("owner = ?", f.Owner).Select("COALESCE(SUM(bytes), 0)").Scan(&total).Error; err != nil {
			return err
		}
		if total+f.Bytes > maxTotal {
			return agent.Errorf(agent.CodeTooLarge, "your files take %d bytes and this one %d; AGENTIK_MAX_USER_FILE_BYTES allows %d in all: delete some first", total, f.Bytes, maxTotal)
		}
		row := fileRow{ID: f.ID, Owner: f.Owner, SHA256: f.SHA256, Name: f.Name, MediaType: f.MediaType, Bytes: f.Bytes, Status: f.Status, CreatedAt: f.CreatedAt.UnixNano()}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		out = row.file()
		return tx.Create(&fileBlobRow{FileID: f.ID, Data: data}).Error
	})
	if err != nil {
		if agent.ErrorCode(err) != "" && agent.ErrorCode(err) != agent.CodeInternal {
			return agent.File{}, false, err
		}
		return agent.File{}, false, fmt.Errorf("store: put file: %w", err)
	}
	return out, dup, nil
}

// fileQuery is a lookup of file id of owner ("" any).
func (s *Store) fileQuery(ctx context.Context, owner, id string) *gorm.DB {
	q := s.r.WithContext(ctx).Where("id = ?", id)
	if owner != "" {
		q = q.Where("owner = ?", owner)
	}
	return q
}

// File implements agent.FileStore.
func (s *Store) File(ctx context.Context, owner, id string) (agent.File, error) {
	if !textOK(id) {
		return agent.File{}, fileNotFound(id)
	}
	var row fileRow
	err := s.fileQuery(ctx, owner, id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.File{}, fileNotFound(id)
	}
	if err != nil {
		return agent.File{}, fmt.Errorf("store: file: %w", err)
	}
	return row.file(), nil
}

// FileContent implements agent.FileStore.
func (s *Store) FileContent(ctx context.Context, owner, id string) ([]byte, error) {
	if _, err := s.File(ctx, owner, id); err != nil {
		return nil, err
	}
	var row fileBlobRow
	if err := s.r.WithContext(ctx).Where("file_id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, fileNotFound(id)
		}
		return nil, fmt.Errorf("store: file content: %w", err)
	}
	return row.Data, nil
}

// Files implements agent.FileStore.
func (s *Store) Files(ctx context.Context, owner string) ([]agent.File, error) {
	var rows []fileRow
	if err := s.r.WithContext(ctx).Where("owner = ?", owner).Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: files: %w", err)
	}
	out := make([]agent.File, len(rows))
	for i, r := range rows {
		out[i] = r.file()
	}
	return out, nil
}

// DeleteFile implements agent.FileStore.
func (s *Store) DeleteFile(ctx context.Context, owner, id string) error {
	defer s.vectors.drop(id)
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Where("id = ?", id)
		if owner != "" {
			q = q.Where("owner = ?", owner)
		}
		res := q.Delete(&fileRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fileNotFound(id)
		}
		for _, m := range []any{&chunkRow{}, &fileBlobRow{}, &knowledgeFileRow{}} {
			if err := tx.Where("file_id = ?", id).Delete(m).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && agent.ErrorCode(err) != agent.CodeNotFound {
		return fmt.Errorf("store: delete file: %w", err)
	}
	return err
}

// PendingFiles implements agent.FileStore.
func (s *Store) PendingFiles(ctx context.Context) ([]agent.File, error) {
	var rows []fileRow
	if err := s.r.WithContext(ctx).Where("status = ?", agent.FileProcessing).Order("created_at").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: pending files: %w", err)
	}
	out := make([]agent.File, len(rows))
	for i, r := range rows {
		out[i] = r.file()
	}
	return out, nil
}

// chunkBatch is how many chunk rows one INSERT carries.
const chunkBatch = 200

// FinishFile implements agent.FileStore.
func (s *Store) FinishFile(ctx context.Context, id string, chunks []agent.Chunk, status, reason string) error {
	defer s.vectors.drop(id)
	rows := make([]chunkRow, len(chunks))
	for i, c := range chunks {
		rows[i] = chunkRow{FileID: id, Ord: i, Page: c.Page, Heading: clean(c.Heading), Text: clean(c.Text), Vector: encodeVector(c.Vector)}
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&fileRow{}).Where("id = ?", id).Updates(map[string]any{"status": status, "error": clean(reason), "chunks": len(chunks)})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fileNotFound(id)
		}
		if err := tx.Where("file_id = ?", id).Delete(&chunkRow{}).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.CreateInBatches(rows, chunkBatch).Error
	})
	if err != nil && agent.ErrorCode(err) != agent.CodeNotFound {
		return fmt.Errorf("store: finish file: %w", err)
	}
	return err
}

// RetryFile implements agent.FileStore.
func (s *Store) RetryFile(ctx context.Context, owner, id string) (agent.File, error) {
	q := s.w.WithContext(ctx).Model(&fileRow{}).Where("id = ? AND status = ?", id, agent.FileFailed)
	if owner != "" {
		q = q.Where("owner = ?", owner)
	}
	res := q.Updates(map[string]any{"status": agent.FileProcessing, "error": ""})
	if res.Error != nil {
		return agent.File{}, fmt.Errorf("store: retry file: %w", res.Error)
	}
	f, err := s.File(ctx, owner, id)
	if err != nil {
		return agent.File{}, err
	}
	if res.RowsAffected == 0 {
		return agent.File{}, agent.Errorf(agent.CodeConflict, "file %s is %s; only a failed file is retried", id, f.Status)
	}
	return f, nil
}

// clean makes extracted text storable: valid UTF-8 without NUL bytes.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// encodeVector is v as little-endian float32 bytes; nil for none.
func encodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// PutKnowledge implements agent.KnowledgeStore.
func (s *Store) PutKnowledge(ctx context.Context, k agent.Knowledge) error {
	for _, f := range [][2]string{{"name", k.Name}, {"description", k.Description}} {
		if err := checkText(f[0], f[1]); err != nil {
			return err
		}
	}
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := knowledgeRow{ID: k.ID, Owner: k.Owner, Name: k.Name, Description: k.Description, Visibility: k.Visibility, Groups: strings.Join(k.Groups, " "), CreatedAt: k.CreatedAt.UnixNano()}
		if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"name", "description", "visibility", "share_groups"})}).Create(&row).Error; err != nil {
			return err
		}
		if err := tx.Where("knowledge_id = ?", k.ID).Delete(&knowledgeFileRow{}).Error; err != nil {
			return err
		}
		if len(k.FileIDs) == 0 {
			return nil
		}
		links := make([]knowledgeFileRow, len(k.FileIDs))
		for i, f := range k.FileIDs {
			links[i] = knowledgeFileRow{KnowledgeID: k.ID, FileID: f, Position: i}
		}
		return tx.CreateInBatches(links, 500).Error
	})
	if err != nil {
		return fmt.Errorf("store: put knowledge: %w", err)
	}
	return nil
}

// Knowledge implements agent.KnowledgeStore.
func (s *Store) Knowledge(ctx context.Context, id string) (agent.Knowledge, error) {
	if !textOK(id) {
		return agent.Knowledge{}, agent.Errorf(agent.CodeNotFound, "knowledge base %q not found", agent.Shorten(id, 80))
	}
	var row knowledgeRow
	err := s.r.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agent.Knowledge{}, agent.Errorf(agent.CodeNotFound, "knowledge base %q not found", agent.Shorten(id, 80))
	}
	if err != nil {
		return agent.Knowledge{}, fmt.Errorf("store: knowledge: %w", err)
	}
	ks, err := s.withFiles(ctx, []knowledgeRow{row})
	if err != nil {
		return agent.Knowledge{}, err
	}
	return ks[0], nil
}

// Knowledges implements agent.KnowledgeStore.
func (s *Store) Knowledges(ctx context.Context, owner string) ([]agent.Knowledge, error) {
	q := s.r.WithContext(ctx).Order("created_at DESC, id DESC")
	if owner != "" {
		q = q.Where("owner = ? OR visibility = ?", owner, agent.VisibilityShared)
	}
	var rows []knowledgeRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: knowledge bases: %w", err)
	}
	return s.withFiles(ctx, rows)
}

// withFiles makes the bases of rows with their file ids and counts.
func (s *Store) withFiles(ctx context.Context, rows []knowledgeRow) ([]agent.Knowledge, error) {
	out := make([]agent.Knowledge, len(rows))
	idx := map[string]int{}
	ids := make([]string, len(rows))
	for i, r := range rows {
		out[i] = agent.Knowledge{ID: r.ID, Name: r.Name, Description: r.Description, Visibility: r.Visibility, Groups: strings.Fields(r.Groups), FileIDs: []string{},
			Status: agent.KnowledgeReady, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), Owner: r.Owner}
		idx[r.ID], ids[i] = i, r.ID
	}
	if len(rows) == 0 {
		return out, nil
	}
	var links []struct {
		KnowledgeID string
		FileID      string
		Status      string
	}
	err := s.r.WithContext(ctx).Table("knowledge_file AS k").Select("k.knowledge_id, k.file_id, f.status").
		Joins("JOIN stored_file f ON f.id = k.file_id").Where("k.knowledge_id IN ?", ids).Order("k.knowledge_id, k.position").Scan(&links).Error
	if err != nil {
		return nil, fmt.Errorf("store: knowledge files: %w", err)
	}
	for _, l := range links {
		k := &out[idx[l.KnowledgeID]]
		k.FileIDs = append(k.FileIDs, l.FileID)
		k.Counts.Total++
		switch l.Status {
		case agent.FileProcessing:
			k.Counts.Processing++
			k.Status = agent.KnowledgeProcessing
		case agent.FileProcessed:
			k.Counts.Processed++
		case agent.FileFailed:
			k.Counts.Failed++
		}
	}
	return out, nil
}

// DeleteKnowledge implements agent.KnowledgeStore.
func (s *Store) DeleteKnowledge(ctx context.Context, id string) error {
	err := s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("knowledge_id = ?", id).Delete(&knowledgeFileRow{}).Error; err != nil {
			return err
		}
		return tx.Where("id = ?", id).Delete(&knowledgeRow{}).Error
	})
	if err != nil {
		return fmt.Errorf("store: delete knowledge: %w", err)
	}
	return nil
}

// queryTerms are a query's words (letters and digits), at most 32.
func queryTerms(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if len(words) > 32 {
		words = words[:32]
	}
	return words
}

// pgTextArray is strs as a PostgreSQL array literal (one parameter, cast
// to text[] in the query).
func pgTextArray(strs []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range strs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range s {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// passageRow is a chunk read for a result.
type passageRow struct {
	ID       int64
	FileID   string
	FileName string
	Page     int
	Heading  string
	Text     string
}

func (r passageRow) passage() agent.Passage {
	return agent.Passage{ChunkID: r.ID, FileID: r.FileID, FileName: r.FileName, Page: r.Page, Heading: r.Heading, Text: r.Text}
}

// KeywordChunks implements agent.KnowledgeStore: any of the query's words,
// ranked by BM25 (SQLite) or ts_rank (PostgreSQL), among files only.
func (s *Store) KeywordChunks(ctx context.Context, files []string, query string, limit int) ([]agent.Passage, error) {
	terms := queryTerms(query)
	if len(terms) == 0 || len(files) == 0 {
		return nil, nil
	}
	var rows []passageRow
	var err error
	if s.postgres {
		// Ranked in memory (terms.go): the same ranking without reading
		// the row of every match.
		best, ok, rerr := s.rankTerms(ctx, files, strings.Join(terms, " | "), limit)
		if rerr != nil {
			return nil, fmt.Errorf("store: keyword chunks: %w", rerr)
		}
		if ok {
			s.termRanked.Add(1)
			ids := make([]int64, len(best))
			for i, r := range best {
				ids[i] = r.id
			}
			out, err := s.passages(ctx, ids)
			if err != nil {
				return nil, fmt.Errorf("store: keyword chunks: %w", err)
			}
			return out, nil
		}
		// Else ranked first, read after, as on SQLite: the inner query ranks
		// the matches' ids by ts_rank over the tsvector kept in the row
		// (postgresChunkStorage), the text of the best limit alone is
		// read. The tsquery is made once (a FROM item: in the generic
		// plan pgx's prepared statement gets after a few searches, an
		// argument of ts_rank was parsed again for every match), and the
		// files are one array joined by hash (a list of parameters was
		// compared one by one with every match's file in that plan).
		// Same rows, same order as ranking them all in one query.
		err = s.r.WithContext(ctx).Raw(`SELECT c.id, c.file_id, f.name AS file_name, c.page, c.heading, c.text
			FROM (SELECT k.id, ts_rank(k.tsv, q) AS score FROM file_chunk k, to_tsquery('simple', ?) q
				WHERE k.tsv @@ q AND k.file_id IN (SELECT unnest(?::text::text[]))
				ORDER BY score DESC, k.id LIMIT ?) t
			JOIN file_chunk c ON c.id = t.id JOIN stored_file f ON f.id = c.file_id
			ORDER BY t.score DESC, t.id`, strings.Join(terms, " | "), pgTextArray(files), limit).Scan(&rows).Error
	} else {
		quoted := make([]string, len(terms))
		for i, t := range terms {
			quoted[i] = `"` + t + `"`
		}
		// Ranked first, read after: the inner query sorts the matches' ids
		// and scores only, and the text of the best limit alone is read
		// (sorting every match with its text read each chunk's row whole,
		// its vector's overflow pages too: 5-7× the bare FTS query,
		// BenchmarkKnowledgeSearch). The inner query keeps the files'
		// chunks by their id spans where it can (chunkSpans: no look-up of
		// each match's row, a quarter of the query's CPU at 100k chunks),
		// else by each match's file; the outer one checks the file of
		// every chunk it reads either way.
		filter, args := "k.file_id IN ?", []any{files}
		join := " JOIN file_chunk k ON k.id = chunk_fts.rowid"
		if spans, ok, serr := s.chunkSpans(ctx, files); serr != nil {
			return nil, fmt.Errorf("store: keyword chunks: %w", serr)
		} else if ok {
			join, args = "", nil
			conds := make([]string, len(spans))
			for i, sp := range spans {
				conds[i] = "chunk_fts.rowid BETWEEN ? AND ?"
				args = append(args, sp.first, sp.last)
			}
			filter = "(" + strings.Join(conds, " OR ") + ")"
		}
		args = append([]any{strings.Join(quoted, " OR ")}, args...)
		args = append(args, limit, files)
		err = s.r.WithContext(ctx).Raw(`SELECT c.id, c.file_id, f.name AS file_name, c.page, c.heading, c.text
			FROM (SELECT chunk_fts.rowid AS id, bm25(chunk_fts) AS score FROM chunk_fts`+join+`
				WHERE chunk_fts MATCH ? AND `+filter+` ORDER BY score, chunk_fts.rowid LIMIT ?) t
			JOIN file_chunk c ON c.id = t.id JOIN stored_file f ON f.id = c.file_id
			WHERE c.file_id IN ? ORDER BY t.score, t.id`, args...).Scan(&rows).Error
	}
	if err != nil {
		return nil, fmt.Errorf("store: keyword chunks: %w", err)
	}
	out := make([]agent.Passage, len(rows))
	for i, r := range rows {
		out[i] = r.passage()
	}
	return out, nil
}

// topN keeps the n greatest items offered, by less: a min-heap with the
// least of them on top (VectorChunks' lower bounds, rankTerms' chunks).
type topN[T any] struct {
	n     int
	less  func(a, b T) bool
	items []T
}

func newTopN[T any](n int, less func(a, b T) bool) *topN[T] {
	return &topN[T]{n: n, less: less, items: make([]T, 0, min(n, 1024))}
}

// full reports whether n items are kept; least is then the nth greatest.
func (t *topN[T]) full() bool { return len(t.items) == t.n }
func (t *topN[T]) least() T   { return t.items[0] }

// offer keeps x if fewer than n items are kept or it is greater than the
// least of them, which it then replaces.
func (t *topN[T]) offer(x T) {
	h := t.items
	if len(h) < t.n {
		h = append(h, x)
		for i := len(h) - 1; i > 0; { // up
			p := (i - 1) / 2
			if !t.less(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.items = h
		return
	}
	if t.n == 0 || !t.less(h[0], x) {
		return
	}
	h[0] = x
	for i := 0; ; { // down
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && t.less(h[l], h[m]) {
			m = l
		}
		if r < len(h) && t.less(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// vectorCandidate is a chunk whose exact score may be among the best:
// hi is its score's upper bound.
type vectorCandidate struct {
	id int64
	hi float64
}

// rescoreBatch is how many candidates' float32 vectors one query reads.
const rescoreBatch = 500

// VectorChunks implements agent.KnowledgeStore: exact cosine (vectors are
// unit length) over every chunk of files that has a vector, best first
// (equal scores by chunk id). The cosine loop reads the vector cache's
// binary16s (vecCache, half.go): each gives a score within its bound of
// the exact one, so a chunk whose upper bound is below the limit-th best
// lower bound cannot be among the best; the others (about limit of them)
// are scored again from their float32s, read from the database, exactly
// as a loop over every float32 would.
func (s *Store) VectorChunks(ctx context.Context, files []string, vec []float32, limit int) ([]agent.Passage, error) {
	if len(files) == 0 || len(vec) == 0 || limit < 1 {
		return nil, nil
	}
	var qn float64
	for _, x := range vec {
		qn += float64(x) * float64(x)
	}
	qn = math.Sqrt(qn)
	if math.IsNaN(qn) || math.IsInf(qn, 0) {
		return nil, nil // no ranking by a query that is not a vector
	}
	lows := newTopN(limit, func(a, b float64) bool { return a < b })
	floor := math.Inf(-1) // the limit-th best lower bound so far
	var cands []vectorCandidate
	for _, f := range files {
		fv, err := s.vectors.get(ctx, s, f)
		if err != nil {
			return nil, fmt.Errorf("store: vector chunks: %w", err)
		}
		if fv == nil || fv.dims != len(vec) {
			continue // no vectors, or another model's
		}
		d := fv.dims
		for i, id := range fv.ids {
			a := float64(dotHalf(vec, fv.half[i*d:(i+1)*d]) * fv.unscale[i])
			b := qn * float64(fv.bound[i])
			hi := a + b
			if hi < floor {
				continue
			}
			cands = append(cands, vectorCandidate{id, hi})
			lo := a - b
			if math.IsNaN(lo) {
				continue
			}
			lows.offer(lo)
			if lows.full() {
				floor = lows.least()
			}
		}
	}
	ids := make([]int64, 0, len(cands))
	for _, c := range cands {
		if !(c.hi < floor) {
			ids = append(ids, c.id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	best, err := s.rescore(ctx, ids, vec, limit)
	if err != nil {
		return nil, fmt.Errorf("store: vector chunks: %w", err)
	}
	out, err := s.passages(ctx, best)
	if err != nil {
		return nil, fmt.Errorf("store: vector chunks: %w", err)
	}
	return out, nil
}

// passages are the chunks ids in that order (a chunk gone, its file
// deleted meanwhile, is left out).
func (s *Store) passages(ctx context.Context, best []int64) ([]agent.Passage, error) {
	if len(best) == 0 {
		return nil, nil
	}
	var prs []passageRow
	if err := s.r.WithContext(ctx).Raw(`SELECT c.id, c.file_id, f.name AS file_name, c.page, c.heading, c.text
		FROM file_chunk c JOIN stored_file f ON f.id = c.file_id WHERE c.id IN ?`, best).Scan(&prs).Error; err != nil {
		return nil, err
	}
	byID := map[int64]passageRow{}
	for _, r := range prs {
		byID[r.ID] = r
	}
	out := make([]agent.Passage, 0, len(best))
	for _, id := range best {
		if r, ok := byID[id]; ok {
			out = append(out, r.passage())
		}
	}
	return out, nil
}

// rescore is the limit best of the chunks ids by the exact cosine of
// their float32 vectors with vec, best first, equal scores by id; a chunk
// gone (its file deleted meanwhile) or of other dimensions is left out,
// one whose score is NaN comes last.
func (s *Store) rescore(ctx context.Context, ids []int64, vec []float32, limit int) ([]int64, error) {
	type exact struct {
		id    int64
		score float32
	}
	scored := make([]exact, 0, len(ids))
	v := make([]float32, len(vec))
	for batch := range slices.Chunk(ids, rescoreBatch) {
		rows, err := s.r.WithContext(ctx).Model(&chunkRow{}).Select("id, vector").Where("id IN ?", batch).Rows()
		if err != nil {
			return nil, err
		}
		var (
			id int64
			b  []byte
		)
		for rows.Next() {
			if err := rows.Scan(&id, &b); err != nil {
				rows.Close()
				return nil, err
			}
			if len(b) != 4*len(vec) {
				continue
			}
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			scored = append(scored, exact{id, dot(vec, v)})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(scored, func(x, y exact) int {
		xn, yn := x.score != x.score, y.score != y.score
		switch {
		case xn != yn:
			if xn {
				return 1
			}
			return -1
		case x.score != y.score && !xn:
			return cmp.Compare(y.score, x.score)
		}
		return cmp.Compare(x.id, y.id)
	})
	best := make([]int64, 0, min(limit, len(scored)))
	for _, e := range scored[:min(limit, len(scored))] {
		best = append(best, e.id)
	}
	return best, nil
}

// vecCacheMax bounds the vector components the vector cache holds (512
// MiB of binary16s): past it, it is emptied and fills again with what
// searches read.
const vecCacheMax = 256 << 20

// fileVectors are one file's chunk vectors in binary16 (half.go): ids[i]'s
// is half[i*dims:(i+1)*dims] times unscale[i], and the exact cosine of
// its float32s with a query q lies within bound[i] times q's length of
// the one its halves give (halfVector).
type fileVectors struct {
	ids     []int64
	half    []uint16
	unscale []float32
	bound   []float32
	dims    int
}

// vecCache keeps processed files' vectors decoded in memory, in binary16
// (the speed layer of VectorChunks, BenchmarkKnowledgeSearch: reading and
// decoding the blobs was 45× the cosine loop). A processed file's chunks never
// change (FinishFile writes them once, as the file leaves processing), so
// an entry stays true until the file is deleted (dropped here, and a
// deleted file's chunks are not found when the passages are read); a
// file without vectors is not kept, so one ingested later on another
// instance is read then.
type vecCache struct {
	mu         sync.Mutex
	files      map[string]*fileVectors
	components int // of every file held
	// spans are files' chunk id spans (chunkSpans), on the same terms:
	// a processed file's chunks never change until it is dropped. gen
	// counts the drops, so a span read before one is not kept after it.
	spans map[string]chunkSpan
	gen   uint64
	// termFiles are processed files' lexemes as postings (terms.go,
	// PostgreSQL), on the same terms; termPostings counts theirs.
	termFiles    map[string]*fileTerms
	termPostings int
	partsMax     int // tests: fewer parts a file's postings may hold than maxParts
}

// maxChunkSpans bounds the id spans a keyword query filters by; past it,
// it looks up each match's file.
const maxChunkSpans = 64

// chunkSpan is the ids of a file's chunks, first to last, when they are
// every id in between (last < first when they are not): on SQLite the
// one writer inserts a file's chunks in one transaction (FinishFile), so
// they are, and files ingested one after another make one span.
type chunkSpan struct{ first, last int64 }

// chunkSpans are the id spans of the chunks of files, merged and in
// order, on SQLite (ok false on PostgreSQL, where ids come from a
// sequence shared by concurrent transactions, or when a file's ids are
// not one span, or the spans are more than maxChunkSpans).
func (s *Store) chunkSpans(ctx context.Context, files []string) (spans []chunkSpan, ok bool, err error) {
	if s.postgres {
		return nil, false, nil
	}
	c := &s.vectors
	for _, f := range files {
		c.mu.Lock()
		sp, cached := c.spans[f]
		gen := c.gen
		c.mu.Unlock()
		if !cached {
			var r struct {
				First, Last, N int64
			}
			if err := s.r.WithContext(ctx).Raw(`SELECT COALESCE(MIN(id), 0) AS first, COALESCE(MAX(id), 0) AS last, COUNT(*) AS n FROM file_chunk WHERE file_id = ?`, f).Scan(&r).Error; err != nil {
				return nil, false, err
			}
			if r.N == 0 {
				continue // no chunks: none to keep (and not kept: they may come)
			}
			sp = chunkSpan{r.First, r.Last}
			if r.Last-r.First+1 != r.N {
				sp = chunkSpan{0, -1}
			}
			c.mu.Lock()
			if c.gen == gen {
				if c.spans == nil {
					c.spans = map[string]chunkSpan{}
				}
				c.spans[f] = sp
			}
			c.mu.Unlock()
		}
		if sp.last < sp.first {
			return nil, false, nil
		}
		spans = append(spans, sp)
	}
	slices.SortFunc(spans, func(a, b chunkSpan) int { return cmp.Compare(a.first, b.first) })
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.first <= merged[n-1].last+1 {
			merged[n-1].last = max(merged[n-1].last, sp.last)
			continue
		}
		merged = append(merged, sp)
	}
	if len(merged) == 0 || len(merged) > maxChunkSpans {
		return nil, false, nil
	}
	return merged, true, nil
}

func (c *vecCache) get(ctx context.Context, s *Store, file string) (*fileVectors, error) {
	c.mu.Lock()
	fv, ok := c.files[file]
	c.mu.Unlock()
	if ok {
		return fv, nil
	}
	rows, err := s.r.WithContext(ctx).Model(&chunkRow{}).Select("id, vector").Where("file_id = ? AND vector IS NOT NULL", file).Order("id").Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fv = &fileVectors{}
	var (
		id int64
		b  []byte
		v  []float32
	)
	for rows.Next() {
		if err := rows.Scan(&id, &b); err != nil {
			return nil, err
		}
		d := len(b) / 4
		if fv.dims == 0 {
			fv.dims = d
			v = make([]float32, d)
		}
		if d != fv.dims {
			continue
		}
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		fv.ids = append(fv.ids, id)
		fv.half = slices.Grow(fv.half, d)[:len(fv.half)+d]
		unscale, bound := halfVector(v, fv.half[len(fv.half)-d:])
		fv.unscale = append(fv.unscale, unscale)
		fv.bound = append(fv.bound, bound)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(fv.ids) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil || c.components+len(fv.half) > vecCacheMax {
		c.files, c.components = map[string]*fileVectors{}, 0
	}
	c.files[file] = fv
	c.components += len(fv.half)
	return fv, nil
}

// drop forgets a file's vectors (deleted, or ingested again).
func (c *vecCache) drop(file string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.spans, file)
	c.gen++
	if ft, ok := c.termFiles[file]; ok {
		c.termPostings -= len(ft.postings)
		delete(c.termFiles, file)
	}
	if fv, ok := c.files[file]; ok {
		c.components -= len(fv.half)
		delete(c.files, file)
	}
}

// reset forgets every file's vectors.
func (c *vecCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files, c.components, c.spans = nil, 0, nil
	c.termFiles, c.termPostings = nil, 0
	c.gen++
}

// deleteFilesOf removes a user's files, their chunks and bytes, and their
// knowledge bases (DeleteUser): a deleted user's shared base is no one's.
func deleteFilesOf(tx *gorm.DB, owner string) error {
	files := tx.Model(&fileRow{}).Select("id").Where("owner = ?", owner)
	bases := tx.Model(&knowledgeRow{}).Select("id").Where("owner = ?", owner)
	for _, q := range []struct {
		m    any
		cond string
		sub  *gorm.DB
	}{
		{&chunkRow{}, "file_id IN (?)", files}, {&fileBlobRow{}, "file_id IN (?)", files}, {&knowledgeFileRow{}, "file_id IN (?)", files},
		{&knowledgeFileRow{}, "knowledge_id IN (?)", bases}, {&conversationKnowledgeRow{}, "knowledge_id IN (?)", bases},
	} {
		if err := tx.Where(q.cond, q.sub).Delete(q.m).Error; err != nil {
			return err
		}
	}
	if err := tx.Where("owner = ?", owner).Delete(&knowledgeRow{}).Error; err != nil {
		return err
	}
	return tx.Where("owner = ?", owner).Delete(&fileRow{}).Error
}

// FileChunks implements agent.FileStore.
func (s *Store) FileChunks(ctx context.Context, id string) ([]agent.Chunk, error) {
	var rows []chunkRow
	if err := s.r.WithContext(ctx).Select("page, heading, text").Where("file_id = ?", id).Order("ord").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: file chunks: %w", err)
	}
	out := make([]agent.Chunk, len(rows))
	for i, r := range rows {
		out[i] = agent.Chunk{Page: r.Page, Heading: r.Heading, Text: r.Text}
	}
	return out, nil
}
