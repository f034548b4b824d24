package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	zs "zombiezen.com/go/sqlite"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog"
	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// The Prep benchmarks measure what SQL parsing costs per agent_event row:
// glebarez/go-sqlite prepares the statement text again on every Exec
// (its stmt.exec), zombiezen's Conn.Prep keeps the prepared statement per
// connection. Each writes the rows of BenchmarkBareBatchedInsert,
// benchAppenders rows per transaction, on one connection of a file whose
// schema Open made (WAL, synchronous NORMAL, every index), in statements
// of 1, eventlog.SQLiteInsertChunk or benchAppenders rows. ns/op is ns per row,
// cpu-ns/row the process CPU time per row.

// prepTimeFormat is how glebarez/go-sqlite writes a time.Time (its
// parseTimeFormats[0]): the zombiezen rows store the same text.
const prepTimeFormat = "2006-01-02 15:04:05.999999999-07:00"

// prepFile is a store file with the schema and conversation c1's created
// event, closed again, and the seq of that event.
func prepFile(b *testing.B) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "prep.db")
	s, err := Open(b.Context(), "sqlite:"+path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Append(b.Context(), createdRec("c1", "bench")); err != nil {
		b.Fatal(err)
	}
	seq := s.wr.Last()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return path, seq
}

// prepRows is the next n token rows after *seq, encoded as
// BenchmarkBareBatchedInsert encodes them.
func prepRows(b *testing.B, seq *int64, n int) []eventRow {
	rows := make([]eventRow, n)
	for i := range rows {
		*seq++
		ev := tokenEvent(*seq)
		ev.Seq, ev.Date = *seq, time.Now().UTC()
		payload, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		cid := ev.ConversationID
		rows[i] = eventRow{Seq: *seq, ID: ev.ID, ConversationID: &cid, CreatedAt: ev.Date, Type: ev.Kind, Payload: string(payload), Owner: "local"}
	}
	return rows
}

// prepInsertSQL is the writer's INSERT OR FAIL of n agent_event rows.
func prepInsertSQL(n int) string {
	return "INSERT OR FAIL INTO agent_event (seq, id, conversation_id, created_at, type, payload, owner) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?),", n), ",")
}

// prepCount fails b unless the file holds want agent_event rows.
func prepCount(b *testing.B, path string, want int) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+sqlitePragmas)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM agent_event").Scan(&n); err != nil {
		b.Fatal(err)
	}
	if n != want {
		b.Fatalf("%d agent_event rows, want %d", n, want)
	}
}

// prepCPU reports the process CPU time since cpu0 per row: the wall time
// of ns/op waits on the five other agents of a loaded machine.
func prepCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/row")
}

var prepStmtRows = []int{1, eventlog.SQLiteInsertChunk, benchAppenders}

// BenchmarkPrepGlebarez is the writer's path before sqlitedrv: database/sql over
// glebarez/go-sqlite with the writer's DSN, one *sql.Tx per
// benchAppenders rows, INSERTs of the given row count.
func BenchmarkPrepGlebarez(b *testing.B) { benchPrepSQL(b, "sqlite") }

// BenchmarkPrepSqlitedrv is BenchmarkPrepGlebarez over sqlitedrv, the
// writer's driver now: the same database/sql calls, each statement text
// compiled once.
func BenchmarkPrepSqlitedrv(b *testing.B) { benchPrepSQL(b, sqlitedrv.DriverName) }

func benchPrepSQL(b *testing.B, driverName string) {
	for _, per := range prepStmtRows {
		b.Run(fmt.Sprintf("rows=%d", per), func(b *testing.B) {
			path, seq := prepFile(b)
			db, err := sql.Open(driverName, "file:"+path+"?"+sqlitePragmas+"&_pragma=wal_autocheckpoint(0)")
			if err != nil {
				b.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			args := make([]any, 0, 7*per)
			cpu0 := processCPU(b)
			b.ResetTimer()
			for done := 0; done < b.N; {
				rows := prepRows(b, &seq, min(benchAppenders, b.N-done))
				tx, err := db.BeginTx(b.Context(), nil)
				if err != nil {
					b.Fatal(err)
				}
				for rest := rows; len(rest) > 0; {
					chunk := rest[:min(per, len(rest))]
					rest = rest[len(chunk):]
					args = args[:0]
					for i := range chunk {
						r := &chunk[i]
						args = append(args, r.Seq, r.ID, *r.ConversationID, r.CreatedAt, r.Type, r.Payload, r.Owner)
					}
					if _, err := tx.ExecContext(b.Context(), prepInsertSQL(len(chunk)), args...); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				done += len(rows)
			}
			b.StopTimer()
			prepCPU(b, cpu0)
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			prepCount(b, path, b.N+1)
		})
	}
}

// BenchmarkPrepZombiezen writes the same rows through zombiezen.com/go/sqlite
// (modernc.org/sqlite/lib without database/sql): cached=true takes each
// statement from Conn.Prep's per-connection cache, cached=false prepares
// and finalizes it per execution, as glebarez/go-sqlite does.
func BenchmarkPrepZombiezen(b *testing.B) {
	for _, cached := range []bool{true, false} {
		for _, per := range prepStmtRows {
			b.Run(fmt.Sprintf("cached=%t/rows=%d", cached, per), func(b *testing.B) {
				benchZombiezen(b, cached, per)
			})
		}
	}
}

func benchZombiezen(b *testing.B, cached bool, per int) {
	path, seq := prepFile(b)
	conn, err := zs.OpenConn(path, zs.OpenReadWrite|zs.OpenURI)
	if err != nil {
		b.Fatal(err)
	}
	// The writer's pragmas (sqlitePragmas and wal_autocheckpoint(0)).
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)", "wal_autocheckpoint(0)"} {
		st, _, err := conn.PrepareTransient("PRAGMA " + p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Step(); err != nil {
			b.Fatal(err)
		}
		if err := st.Finalize(); err != nil {
			b.Fatal(err)
		}
	}
	exec := func(q string) {
		st := conn.Prep(q)
		if _, err := st.Step(); err != nil {
			b.Fatal(err)
		}
		if err := st.Reset(); err != nil {
			b.Fatal(err)
		}
	}
	sqlText := make(map[int]string)
	cpu0 := processCPU(b)
	b.ResetTimer()
	for done := 0; done < b.N; {
		rows := prepRows(b, &seq, min(benchAppenders, b.N-done))
		exec("BEGIN IMMEDIATE")
		for rest := rows; len(rest) > 0; {
			chunk := rest[:min(per, len(rest))]
			rest = rest[len(chunk):]
			q, ok := sqlText[len(chunk)]
			if !ok {
				q = prepInsertSQL(len(chunk))
				sqlText[len(chunk)] = q
			}
			var st *zs.Stmt
			if cached {
				st = conn.Prep(q) // reset and cleared by Prep
			} else if st, _, err = conn.PrepareTransient(q); err != nil {
				b.Fatal(err)
			}
			for i := range chunk {
				r, k := &chunk[i], 7*i
				st.BindInt64(k+1, r.Seq)
				st.BindText(k+2, r.ID)
				st.BindText(k+3, *r.ConversationID)
				st.BindText(k+4, r.CreatedAt.Format(prepTimeFormat))
				st.BindText(k+5, r.Type)
				st.BindText(k+6, r.Payload)
				st.BindText(k+7, r.Owner)
			}
			if _, err := st.Step(); err != nil {
				b.Fatal(err)
			}
			if cached {
				err = st.Reset()
			} else {
				err = st.Finalize()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		exec("COMMIT")
		done += len(rows)
	}
	b.StopTimer()
	prepCPU(b, cpu0)
	if err := conn.Close(); err != nil {
		b.Fatal(err)
	}
	prepCount(b, path, b.N+1)
}

// BenchmarkWriterDriver is BenchmarkCommit (the writer's commit of
// append_text events of 100 conversations, its real path: gorm, the
// INSERT, the checkpointer's kick) with the writer's connection on either
// driver: glebarez/go-sqlite, which compiles each statement on each
// execution (the writer before sqlitedrv), or sqlitedrv, which keeps them
// compiled. cpu-µs/event is the process CPU time per row.
func BenchmarkWriterDriver(b *testing.B) {
	for _, drv := range []string{"glebarez", "sqlitedrv"} {
		for _, size := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("driver=%s/rows=%d", drv, size), func(b *testing.B) {
				opt := Options{Publish: func([]agent.Encoded) {}, glebarezWriter: drv == "glebarez"}
				benchCommit(b, benchStore(b, opt), size)
			})
		}
	}
}
