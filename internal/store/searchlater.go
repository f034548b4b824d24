package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
)

// On SQLite a search_doc row's body reaches search_body (FTS5) a moment
// after the commit that wrote the row, not inside it; titles stay in the
// commit (search_title, one a conversation).
//
// Why: every FTS5 transaction writes a segment, and FTS5 merges segments
// as they pile up, inside the transaction that tips them over. With one
// transaction per message, a commit that held a message took up to tens
// of milliseconds now and then (measured: a one-message commit's p99 13–19
// ms in the bench's mix, some over 30), and the writer is one goroutine: the
// tokens of every other turn queued behind it. In the mix that was most of
// the token p99 above the bare relay's: fast mode's p99 was 18–25 ms with
// the bodies indexed in their commit and 10–12 ms with no body index at all
// (three alternated runs each, quiet; docs/BENCHMARKS.md).
//
// How: the writer indexes bodies between its transactions (Committed), in
// bites of bodyBite rows, only while no request waits for it, unless more
// than bodyBehind rows wait or a search does. A search waits until every
// row committed before it began is indexed (bodiesIndexed), so a search
// finds what was answered before it, as when the index was in the commit.
// The meta row search_body_mark holds the last row indexed; every row
// through it is in search_body, none after it is. The triggers that delete
// or rewrite a body in search_body do so only through the mark (an FTS5
// external-content delete of a row it never indexed would corrupt it). A
// crash before a row was indexed leaves it after the mark: Open indexes it.
// search_doc's ids are AUTOINCREMENT, never reused, so "through the mark"
// is exact.

const (
	// metaSearchBodyMark is the meta key of the last search_doc id whose
	// body is in search_body.
	metaSearchBodyMark = "search_body_mark"
	// bodyBite is how many rows one indexing transaction takes while the
	// writer is otherwise idle: a few milliseconds, the longest a request
	// that arrives meanwhile waits for it.
	bodyBite = 8
	// bodyBehind is how many rows may wait before the writer indexes them
	// even with requests queued.
	bodyBehind = 256
	// bodyOpenBite is a bite at Open, before anything waits for the writer.
	bodyOpenBite = 1000
)

// bodyIndex follows search_body's progress (SQLite only).
type bodyIndex struct {
	mark   atomic.Int64 // every search_doc id through it is indexed
	last   atomic.Int64 // the highest search_doc id committed
	wanted atomic.Bool  // a search waits for the rows through last
	failed atomic.Bool  // a bite failed: searches stop waiting until one succeeds
	hold   atomic.Bool  // tests: the writer indexes only for a search (a crash before indexing, when one closes)

	mu    sync.Mutex
	moved chan struct{} // closed (and replaced) when mark moves or a bite fails
}

func newBodyIndex() *bodyIndex { return &bodyIndex{moved: make(chan struct{})} }

// signal wakes the searches waiting for the mark.
func (b *bodyIndex) signal() {
	b.mu.Lock()
	close(b.moved)
	b.moved = make(chan struct{})
	b.mu.Unlock()
}

// sqliteBodyTriggers keep the title index in the commit and the body index
// through the mark (see above). They replace the triggers of databases
// made before (dropped by name at every Open, inside its migration).
var sqliteBodyTriggers = []string{
	`DROP TRIGGER IF EXISTS search_doc_ai`,
	`DROP TRIGGER IF EXISTS search_doc_ad`,
	`DROP TRIGGER IF EXISTS search_doc_au`,
	`CREATE TRIGGER search_doc_ai AFTER INSERT ON search_doc BEGIN
		INSERT INTO search_title(rowid, title) VALUES (new.id, new.title); END`,
	`CREATE TRIGGER search_doc_ad AFTER DELETE ON search_doc BEGIN
		INSERT INTO search_title(search_title, rowid, title) VALUES ('delete', old.id, old.title);
		INSERT INTO search_body(search_body, rowid, body) SELECT 'delete', old.id, old.body
			WHERE old.id <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = '` + metaSearchBodyMark + `'); END`,
	`CREATE TRIGGER search_doc_au AFTER UPDATE ON search_doc BEGIN
		INSERT INTO search_title(search_title, rowid, title) VALUES ('delete', old.id, old.title);
		INSERT INTO search_title(rowid, title) VALUES (new.id, new.title);
		INSERT INTO search_body(search_body, rowid, body) SELECT 'delete', old.id, old.body
			WHERE old.id <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = '` + metaSearchBodyMark + `');
		INSERT INTO search_body(rowid, body) SELECT new.id, new.body
			WHERE new.id <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = '` + metaSearchBodyMark + `'); END`,
}

// migrateBodyMark gives a database its mark before the triggers that read
// it: a database without one had every row indexed in its commit (the
// triggers before these), so its mark is its last row.
func migrateBodyMark(tx *gorm.DB) error {
	if err := tx.Exec(`INSERT INTO meta (key, value) SELECT ?, (SELECT CAST(COALESCE(MAX(id), 0) AS TEXT) FROM search_doc)
		WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = ?)`, metaSearchBodyMark, metaSearchBodyMark).Error; err != nil {
		return fmt.Errorf("search index: mark: %w", err)
	}
	for _, q := range sqliteBodyTriggers {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	return nil
}

// openBodies reads the mark and the last row, and indexes what a crash
// (or a reindex at this Open) left after the mark, before the writer
// starts.
func (s *Store) openBodies(ctx context.Context) error {
	b := s.bodies
	if b == nil {
		return nil
	}
	var mark string
	if err := s.readRow(ctx, "SELECT value FROM meta WHERE key = ?", metaSearchBodyMark).Scan(&mark); err != nil {
		return fmt.Errorf("store: search index mark: %w", err)
	}
	m, err := strconv.ParseInt(mark, 10, 64)
	if err != nil {
		return fmt.Errorf("store: search index mark %q: %w", mark, err)
	}
	var last sql.NullInt64
	if err := s.readRow(ctx, "SELECT MAX(id) FROM search_doc").Scan(&last); err != nil {
		return fmt.Errorf("store: search index: %w", err)
	}
	b.mark.Store(m)
	b.last.Store(max(m, last.Int64))
	for b.mark.Load() < b.last.Load() {
		if err := s.indexBite(bodyOpenBite); err != nil {
			return fmt.Errorf("store: search index: %w", err)
		}
	}
	return nil
}

// indexBodies is the writer's, between two of its transactions: it
// indexes the rows after the mark while no request waits (or too many rows
// do, or a search), a bite at a time.
func (s *Store) indexBodies() {
	b := s.bodies
	if b == nil {
		return
	}
	for b.mark.Load() < b.last.Load() {
		want := b.wanted.Load()
		if !want && (b.hold.Load() || (b.last.Load()-b.mark.Load() < bodyBehind && s.wr.Queued() > 0)) {
			return
		}
		if err := s.indexBite(bodyBite); err != nil {
			s.log.Error("search_index_failed", "err", err, "hint", "the newest messages are not found by search until a later commit indexes them")
			b.failed.Store(true)
			b.signal()
			return
		}
	}
	b.wanted.Store(false)
}

// indexBite indexes up to n rows after the mark in one transaction on the
// writer's connection, and moves the mark past them (to the last row when
// the rows after the mark are gone: deleted before they were indexed).
func (s *Store) indexBite(n int) error {
	b := s.bodies
	mark, last := b.mark.Load(), b.last.Load()
	to := last
	err := s.w.Transaction(func(tx *gorm.DB) error {
		var top sql.NullInt64
		if err := rawRow(tx, "SELECT MAX(id) FROM (SELECT id FROM search_doc WHERE id > ? ORDER BY id LIMIT ?)", mark, n).Scan(&top); err != nil {
			return err
		}
		if top.Valid && top.Int64 < last {
			to = top.Int64
		}
		if _, err := rawExec(tx, "INSERT INTO search_body(rowid, body) SELECT id, body FROM search_doc WHERE id > ? AND id <= ?", mark, to); err != nil {
			return err
		}
		_, err := rawExec(tx, "UPDATE meta SET value = ? WHERE key = ?", strconv.FormatInt(to, 10), metaSearchBodyMark)
		return err
	})
	if err != nil {
		return err
	}
	b.mark.Store(to)
	b.failed.Store(false)
	b.signal()
	return nil
}

// bodiesIndexed waits until every row committed before it was called is
// in search_body (the writer indexes them at once for it), or a bite
// fails, or ctx ends.
func (s *Store) bodiesIndexed(ctx context.Context) error {
	b := s.bodies
	if b == nil {
		return nil
	}
	target := b.last.Load()
	for {
		b.mu.Lock()
		moved := b.moved
		b.mu.Unlock()
		if b.mark.Load() >= target || b.failed.Load() {
			return nil
		}
		b.wanted.Store(true)
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
