package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentik/agentik/internal/eventlog"
	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// BenchmarkTempFloor is the least SQL a stateless /v1 request could cost if
// temp conversations were the store's rows in a private in-memory SQLite
// database (issue 24 item 5): the statements alone, hand-written, on
// sqlitedrv's cached statements, on one connection, with no gorm, no
// encoding and no rule checks. One op is one request of the given
// history: a transaction that creates the conversation, inserts its
// history and the user message in one INSERT, their working memory in
// another, and starts the turn (one UPDATE); the two reads of a turn (the
// conversation, its memory); a transaction that inserts the answer, its
// memory and ends the turn (one UPDATE); the DELETE (cascading through the
// tables that reference a conversation). indexes=all keeps every index the
// store migrates; indexes=min drops the list indexes that only the sidebar
// and the search read. cpu-ns/op is the process CPU per request: set it
// beside BenchmarkStatelessCompletion's (internal/openai) to see what is
// left for everything else within the landing bar.
func BenchmarkTempFloor(b *testing.B) {
	for _, idx := range []string{"all", "min"} {
		for _, history := range []int{1, 20} {
			b.Run(fmt.Sprintf("indexes=%s/history=%d", idx, history), func(b *testing.B) {
				benchTempFloor(b, idx == "min", history)
			})
		}
	}
}

func benchTempFloor(b *testing.B, minIdx bool, history int) {
	ctx := context.Background()
	dsn := "file:tempfloor?mode=memory&_pragma=foreign_keys(1)&_pragma=page_size(1024)&_txlock=immediate"
	g, err := gorm.Open(eventlog.SQLiteWriterDialector(dsn), &gorm.Config{SkipDefaultTransaction: true, Logger: logger.Discard})
	if err != nil {
		b.Fatal(err)
	}
	db, err := g.DB()
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	defer db.Close()
	if err := g.AutoMigrate(&conversationRow{}, &messageRow{}, &memoryRow{}, &queueRow{}, &pendingRow{}, &elicitRow{}); err != nil {
		b.Fatal(err)
	}
	if minIdx {
		var names []string
		if err := g.Raw("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'conversation' AND sql IS NOT NULL").Scan(&names).Error; err != nil {
			b.Fatal(err)
		}
		for _, n := range names {
			if n == "idx_conversation_source" {
				continue // unique: a rule (an import's source)
			}
			if err := g.Exec("DROP INDEX " + n).Error; err != nil {
				b.Fatal(err)
			}
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()

	payload := `{"id":"m-0000000000000000","conversation_id":"c-0000000000000000","seq":0,"type":"user","date":"2026-12-02T05:00:00Z","parent_id":"m-0000000000000001","content":[{"type":"text","text":"earlier message 0 of the history"}]}`
	memory := `{"role":"user","content":[{"type":"text","text":"earlier message 0 of the history"}]}`
	rows := func(n, cols int) string {
		one := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
		return strings.TrimSuffix(strings.Repeat(one+",", n), ",")
	}
	insConv := "INSERT INTO conversation (id, title, created_at, updated_at, owner, model) VALUES (?,?,?,?,?,?)"
	insMsgH := "INSERT INTO message (id, conversation_id, seq, type, date, payload, parent_id) VALUES " + rows(history, 7)
	insMemH := "INSERT INTO working_memory (conversation_id, order_idx, payload) VALUES " + rows(history, 3)
	start := "UPDATE conversation SET head = ?, message_count = message_count + ?, updated_at = ?, running = 1, running_since = ?, turn_seq = ?, turn_owner = ? WHERE id = ? AND running = 0"
	readConv := "SELECT id, title, created_at, updated_at, message_count, running, running_since, turn_seq, turn_owner, source, context_tokens, context_window, context_bytes, model, system_prompt, params, user_titled, queued, waiting, head, memory_stale, agent, parent_id, parent_call, owner, archived, pinned FROM conversation WHERE id = ?"
	readMem := "SELECT payload FROM working_memory WHERE conversation_id = ? ORDER BY order_idx"
	insMsg := "INSERT INTO message (id, conversation_id, seq, type, date, payload, parent_id) VALUES (?,?,?,?,?,?,?)"
	insMem := "INSERT INTO working_memory (conversation_id, order_idx, payload) VALUES (?,?,?)"
	end := "UPDATE conversation SET head = ?, message_count = message_count + 1, updated_at = ?, running = 0, running_since = NULL, turn_seq = 0, turn_owner = '', context_tokens = ?, context_window = ?, context_bytes = ? WHERE id = ?"
	del := "DELETE FROM conversation WHERE id = ?"

	var seq int64
	exec := func(tx *sql.Tx, q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("%.40s: %v", q, err)
		}
	}
	request := func(i int) {
		now := time.Now().UTC()
		cid := fmt.Sprintf("c-%016d", i)
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		exec(tx, insConv, cid, "", now, now, "local", "fake")
		margs := make([]any, 0, 7*history)
		wargs := make([]any, 0, 3*history)
		parent := ""
		for j := range history {
			seq++
			id := fmt.Sprintf("m-%016d", seq)
			p := parent
			margs = append(margs, id, cid, seq, "user", now, payload, &p)
			wargs = append(wargs, cid, j, memory)
			parent = id
		}
		exec(tx, insMsgH, margs...)
		exec(tx, insMemH, wargs...)
		exec(tx, start, parent, history, now, now, seq, "instance", cid)
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}

		var c conversationRow
		if err := conn.QueryRowContext(ctx, readConv, cid).Scan(&c.ID, &c.Title, &c.CreatedAt, &c.UpdatedAt, &c.MessageCount, &c.Running, &c.RunningSince, &c.TurnSeq, &c.TurnOwner, &c.Source, &c.ContextTokens, &c.ContextWindow, &c.ContextBytes, &c.Model, &c.SystemPrompt, &c.Params, &c.UserTitled, &c.Queued, &c.Waiting, &c.Head, &c.MemoryStale, &c.Agent, &c.ParentID, &c.ParentCall, &c.Owner, &c.Archived, &c.Pinned); err != nil {
			b.Fatal(err)
		}
		mr, err := conn.QueryContext(ctx, readMem, cid)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for mr.Next() {
			var p string
			if err := mr.Scan(&p); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := mr.Close(); err != nil || n != history {
			b.Fatalf("memory: %d rows, %v", n, err)
		}

		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			b.Fatal(err)
		}
		seq++
		id := fmt.Sprintf("m-%016d", seq)
		exec(tx, insMsg, id, cid, seq, "assistant", now, payload, &parent)
		exec(tx, insMem, cid, history, memory)
		exec(tx, end, id, now, 100, 1000, 400, cid)
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, del, cid); err != nil {
			b.Fatal(err)
		}
	}
	request(-1) // compile every statement once
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := 0; b.Loop(); i++ {
		request(i)
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	var st sqlitedrv.Stats
	if err := conn.Raw(func(c any) error { st = c.(*sqlitedrv.Conn).Stats(); return nil }); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Compiled), "compiled")
}
