package store

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The writer's statements of every request (a message and its search
// document, the head it follows, working memory, the conversation's
// INSERT, updates and DELETE with its redaction, the owner and waiting
// look-ups) are written here as SQL and run on the transaction's
// connection, as the engine runs the event INSERT (eventlog/commit.go): gorm builds each
// statement by reflection on every call, about as much CPU as SQLite's own
// work for a one-row statement (BenchmarkCommitTurn,
// BenchmarkCommitLifecycle). The reads of every turn (Conversation,
// Memory) run the same way on the read pool (readRow). The texts use ? placeholders;
// on PostgreSQL they become $n (pgText). Errors are translated by the
// dialector, as gorm's TranslateError does, so gorm.ErrDuplicatedKey and
// gorm.ErrForeignKeyViolated mean what they mean for gorm's statements.

// rawExec runs q in tx's connection (the writer's transaction).
func rawExec(tx *gorm.DB, q string, args ...any) (sql.Result, error) {
	res, err := tx.Statement.ConnPool.ExecContext(rawCtx(tx), rawText(tx, q), args...)
	if err != nil {
		return nil, translate(tx, err)
	}
	return res, nil
}

// rawRow runs the query q in tx's connection; Scan's error is untranslated
// (sql.ErrNoRows stays itself).
func rawRow(tx *gorm.DB, q string, args ...any) *sql.Row {
	return tx.Statement.ConnPool.QueryRowContext(rawCtx(tx), rawText(tx, q), args...)
}

func rawCtx(tx *gorm.DB) context.Context {
	if ctx := tx.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

func translate(tx *gorm.DB, err error) error {
	if t, ok := tx.Dialector.(gorm.ErrorTranslator); ok {
		return t.Translate(err)
	}
	return err
}

func rawText(tx *gorm.DB, q string) string {
	if tx.Dialector.Name() == "postgres" {
		return pgText(q)
	}
	return q
}

// pgTexts caches pgText's answers: the writer's texts are a few dozen.
var pgTexts sync.Map // string → string

// pgText numbers q's ? placeholders as PostgreSQL's $1, $2, … (no text of
// the writer has a ? inside a literal).
func pgText(q string) string {
	if v, ok := pgTexts.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	pgTexts.Store(q, b.String())
	return b.String()
}

// updateConversationWhere sets cols (a column's value may be a gorm.Expr,
// e.g. "message_count + 1") of the conversation rows that where (with its
// args) selects, as gorm's UpdateColumns does (no hooks, no automatic
// updated_at), and returns how many rows it changed. cols must not be
// empty.
func updateConversationWhere(tx *gorm.DB, cols map[string]any, where string, whereArgs ...any) (int64, error) {
	var q strings.Builder
	args := make([]any, 0, len(cols)+len(whereArgs))
	q.WriteString("UPDATE conversation SET ")
	for i, k := range slices.Sorted(maps.Keys(cols)) {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(k)
		if e, ok := cols[k].(clause.Expr); ok {
			q.WriteString(" = ")
			q.WriteString(e.SQL)
			args = append(args, e.Vars...)
			continue
		}
		q.WriteString(" = ?")
		args = append(args, cols[k])
	}
	q.WriteString(" WHERE ")
	q.WriteString(where)
	args = append(args, whereArgs...)
	res, err := rawExec(tx, q.String(), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// rawRows runs the query q in tx's connection.
func rawRows(tx *gorm.DB, q string, args ...any) (*sql.Rows, error) {
	rows, err := tx.Statement.ConnPool.QueryContext(rawCtx(tx), rawText(tx, q), args...)
	if err != nil {
		return nil, translate(tx, err)
	}
	return rows, nil
}

// readRow runs the query q on the read pool, as rawRow does in the
// writer's transaction: Conversation and Memory are read on every turn.
func (s *Store) readRow(ctx context.Context, q string, args ...any) *sql.Row {
	if s.postgres {
		q = pgText(q)
	}
	return s.rdb.QueryRowContext(ctx, q, args...)
}

// readRows runs the query q on the read pool.
func (s *Store) readRows(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s.postgres {
		q = pgText(q)
	}
	return s.rdb.QueryContext(ctx, q, args...)
}

// insertConversationSQL inserts one conversation row with every column
// (gorm's Create of conversationRow wrote the same values).
const insertConversationSQL = "INSERT INTO conversation (id, title, created_at, updated_at, message_count, running, running_since, turn_seq, turn_owner, source, " +
	"context_tokens, context_window, context_bytes, model, system_prompt, params, user_titled, queued, waiting, head, memory_stale, agent, parent_id, parent_call, owner, archived, pinned, project, tools) " +
	"VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"

// insertConversation writes r.
func insertConversation(tx *gorm.DB, r *conversationRow) error {
	_, err := rawExec(tx, insertConversationSQL, r.ID, r.Title, r.CreatedAt, r.UpdatedAt, r.MessageCount, r.Running, nullTime(r.RunningSince), r.TurnSeq, r.TurnOwner, nullText(r.Source),
		r.ContextTokens, r.ContextWindow, r.ContextBytes, r.Model, r.SystemPrompt, r.Params, r.UserTitled, r.Queued, r.Waiting, nullText(r.Head), r.MemoryStale, r.Agent, r.ParentID, r.ParentCall, r.Owner, r.Archived, r.Pinned, r.Project, r.Tools)
	return err
}

// nullText and nullTime bind a nil pointer as NULL (a typed nil would be
// bound by reflection).
func nullText(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullTime(p *time.Time) any {
	if p == nil {
		return nil
	}
	return *p
}

// waitingOf reads conversation cid's waiting column in tx; sql.ErrNoRows
// when there is no such conversation.
func waitingOf(tx *gorm.DB, cid string) (string, error) {
	var w string
	err := rawRow(tx, "SELECT waiting FROM conversation WHERE id = ?", cid).Scan(&w)
	return w, err
}

// countConversation is 1 when conversation cid exists in tx, else 0.
func countConversation(tx *gorm.DB, cid string) (int64, error) {
	var n int64
	err := rawRow(tx, "SELECT COUNT(*) FROM conversation WHERE id = ?", cid).Scan(&n)
	return n, err
}
