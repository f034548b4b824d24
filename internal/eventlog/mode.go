package eventlog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"gorm.io/gorm"

	"github.com/agentik/agentik/internal/agent"
)

// The switch between the store's two modes on SQLite (docs/store.md): plain
// mode reads a key's events from the events table by an ordinary index of
// it (PlainIndex) in place of its run index, which it leaves empty, and
// keeps no delta log; fast mode drops those indexes once its run indexes
// hold every event (Recover). Opening a database plain folds the delta log
// fast mode left into the events table (FoldDeltaLog).

// PlainIndex is an ordinary index of the events table by a run index's
// key column and seq, which plain mode reads a key's events by.
type PlainIndex struct {
	Name string // the index's name
	Runs *Runs  // the run index it stands in for: its table, key column and events table

	seqsSQL string
}

// NewPlainIndex returns the index name of the events table that stands in
// for the run index r in plain mode.
func NewPlainIndex(name string, r *Runs) *PlainIndex {
	return &PlainIndex{Name: name, Runs: r,
		seqsSQL: "SELECT seq FROM " + r.Events + " INDEXED BY " + name + " WHERE " + r.Column + " = ? AND seq > ? ORDER BY seq"}
}

// SeqsSQL is the read of a key's seqs after a seq (parameters: the key,
// the seq), in order, by the index.
func (p *PlainIndex) SeqsSQL() string { return p.seqsSQL }

// Seqs is Runs.Seqs by the index: the seqs of key's events above after, at
// most want (≤ 0: all), and whether more are left.
func (p *PlainIndex) Seqs(db *gorm.DB, key string, after int64, want int) (seqs []int64, more bool, err error) {
	q, args := p.seqsSQL, []any{key, after}
	if want > 0 {
		q += " LIMIT ?"
		args = append(args, want+1)
	}
	if err := db.Raw(q, args...).Scan(&seqs).Error; err != nil {
		return nil, false, err
	}
	if want > 0 && len(seqs) > want {
		return seqs[:want], true, nil
	}
	return seqs, false, nil
}

// MigratePlain makes plain mode's indexes, then the tables of the run
// indexes they stand in for (left empty by plain mode, so that Prune's
// statements find them).
func MigratePlain(tx *gorm.DB, ix ...*PlainIndex) error {
	var ddl []string
	for _, p := range ix {
		ddl = append(ddl, "CREATE INDEX IF NOT EXISTS "+p.Name+" ON "+p.Runs.Events+" ("+p.Runs.Column+", seq)")
	}
	for _, p := range ix {
		ddl = append(ddl, "CREATE TABLE IF NOT EXISTS "+p.Runs.Table+" ("+p.Runs.Column+" TEXT NOT NULL, seq INTEGER NOT NULL, seqs BLOB, PRIMARY KEY ("+p.Runs.Column+", seq)) WITHOUT ROWID")
	}
	for _, q := range ddl {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("plain mode: %w", err)
		}
	}
	return nil
}

// DropPlain drops plain mode's indexes, once fast mode's run indexes hold
// every event.
func DropPlain(tx *gorm.DB, ix ...*PlainIndex) error {
	for _, p := range ix {
		if err := tx.Exec("DROP INDEX IF EXISTS " + p.Name).Error; err != nil {
			return err
		}
	}
	return nil
}

// LeftDeltaLog opens the delta log the fast mode left beside the database
// at path (as OpenDeltaLog), or returns nil when there is none or the
// database is new (epoch "").
func LeftDeltaLog(path, epoch string, log *slog.Logger, redacted func(payload string) (string, error)) (*DeltaLog, error) {
	if epoch == "" {
		return nil, nil // a new database
	}
	if _, err := os.Stat(path + "-deltas"); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return OpenDeltaLog(path, epoch, log, redacted)
}

// FoldDeltaLog writes the records of the delta log l into the events table
// t, in one transaction, then closes l and removes its files: plain mode
// reads the table alone. The records are first cut as fast mode cuts them
// at open (below t's pruned-through seq, and those of a key whose stored
// answers false redacted: RedactOrphans). A crash before the files are
// gone folds them again (a stored seq is kept).
func FoldDeltaLog(db *gorm.DB, t *Table, l *DeltaLog, stored func(keys []string) (map[string]bool, error)) error {
	defer l.Close()
	pruned, _, err := t.Bounds(db)
	if err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := l.Prune(pruned); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := l.RedactOrphans(stored); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		var args []any
		flush := func() error {
			if len(args) == 0 {
				return nil
			}
			q := "INSERT OR IGNORE INTO " + t.Name + " (" + strings.Join(t.Columns[:], ", ") + ") VALUES " +
				strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?),", len(args)/7), ",")
			err := tx.Exec(q, args...).Error
			args = args[:0]
			return err
		}
		if err := l.Each(func(d Delta) error {
			// In Row's order; a delta log's record is a text delta of a
			// key, as its reads (Read) make it.
			args = append(args, d.Seq, d.ID, d.Conv, d.Created, agent.KindConversation, string(d.JSON), d.Owner)
			if len(args) >= 7*SQLiteInsertChunk {
				return flush()
			}
			return nil
		}); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	if err := os.RemoveAll(l.Dir()); err != nil {
		return fmt.Errorf("fold delta log: %w", err)
	}
	return nil
}
