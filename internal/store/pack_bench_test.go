package store

import (
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// BenchmarkPackedLog is a measured sketch, not the store (issue 32 item 1:
// what a durable mix within 1.25× of a relay that stores nothing needs).
// Today every token is an agent_event row: the table and its three indexes,
// of which (conversation_id, seq) puts each token of 100 concurrent streams
// in another leaf page. The sketch writes each commit's token events as ONE
// row of a table with no secondary index (pack: seq_lo primary key, seq_hi,
// the events length-prefixed in one blob), with or without one entry per
// event in a (conversation_id, seq) table (pack+conv), against today's one
// row per event (rows). Commits hold 8 events (the mix's group commit at
// 5,000 tokens/s) or 64, of 100 conversations, on the writer's driver and
// pragmas (sqlitedrv, WAL, synchronous NORMAL, checkpoints off: the
// checkpointer's cost is per page written, so it follows the same ratio).
// It reports the process CPU per event.
//
// The read side of the same sketch is BenchmarkPackedReplay.
func BenchmarkPackedLog(b *testing.B) {
	for _, per := range []int{8, 64} {
		for _, shape := range []string{"rows", "pack", "pack+conv"} {
			b.Run(fmt.Sprintf("events=%d/%s", per, shape), func(b *testing.B) {
				db, seq := packDB(b)
				w := packWriter(b, db, shape)
				cpu0 := processCPU(b)
				b.ResetTimer()
				for done := 0; done < b.N; {
					rows := packRows(b, &seq, min(per, b.N-done))
					w(rows)
					done += len(rows)
				}
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/event")
			})
		}
	}
}

// BenchmarkPackedReplay reads back one conversation's last 500 tokens
// while 100 conversations streamed at once (the events of 100 × 500
// tokens, interleaved): by its rows through idx_event_conversation_seq
// today (rows), or from the packed rows of the turn's span, every event's
// header read to keep its conversation's (pack): what the sketch pays on
// the read side, per replay.
func BenchmarkPackedReplay(b *testing.B) {
	const convs, tokens = 100, 500
	for _, shape := range []string{"rows", "pack"} {
		b.Run(shape, func(b *testing.B) {
			db, seq := packDB(b)
			w := packWriter(b, db, shape)
			first := seq + 1
			for range convs * tokens / 8 {
				w(packRows(b, &seq, 8))
			}
			want := "c7"
			cpu0 := processCPU(b)
			b.ResetTimer()
			for b.Loop() {
				n := 0
				switch shape {
				case "rows":
					rs, err := db.QueryContext(b.Context(), "SELECT seq, payload FROM agent_event WHERE conversation_id = ? AND seq >= ? ORDER BY seq", want, first)
					if err != nil {
						b.Fatal(err)
					}
					for rs.Next() {
						var s int64
						var p []byte
						if err := rs.Scan(&s, &p); err != nil {
							b.Fatal(err)
						}
						n++
					}
					if err := rs.Close(); err != nil {
						b.Fatal(err)
					}
				case "pack":
					rs, err := db.QueryContext(b.Context(), "SELECT payload FROM agent_event_pack WHERE seq_hi >= ? ORDER BY seq_lo", first)
					if err != nil {
						b.Fatal(err)
					}
					for rs.Next() {
						var p []byte
						if err := rs.Scan(&p); err != nil {
							b.Fatal(err)
						}
						for len(p) > 0 {
							cl, l := int(p[0]), int(binary.LittleEndian.Uint32(p[1:5]))
							if string(p[5:5+cl]) == want {
								n++
							}
							p = p[5+cl+l:]
						}
					}
					if err := rs.Close(); err != nil {
						b.Fatal(err)
					}
				}
				if n != tokens {
					b.Fatalf("read %d of %s's events, want %d", n, want, tokens)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/replay")
		})
	}
}

// packDB is a store file with every table and index Open makes, plus the
// sketch's two tables and the index agent_event had when the sketch was
// measured (idx_event_conversation_seq, replaced since by
// event_conversation: convindex.go), open on the writer's driver.
func packDB(b *testing.B) (*sql.DB, int64) {
	b.Helper()
	path, seq := prepFile(b)
	db, err := sql.Open(sqlitedrv.DriverName, "file:"+path+"?"+sqlitePragmas+"&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { _ = db.Close() })
	for _, q := range []string{
		"CREATE TABLE agent_event_pack (seq_lo INTEGER PRIMARY KEY, seq_hi INTEGER NOT NULL, payload BLOB NOT NULL)",
		"CREATE TABLE agent_event_conv (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID",
		"CREATE INDEX " + droppedConvIndex + " ON agent_event (conversation_id, seq)",
	} {
		if _, err := db.ExecContext(b.Context(), q); err != nil {
			b.Fatal(err)
		}
	}
	return db, seq
}

// packRows is the next n token rows after *seq, round robin over 100
// conversations (c0 … c99), encoded as the writer encodes them.
func packRows(b *testing.B, seq *int64, n int) []eventRow {
	rows := make([]eventRow, n)
	for i := range rows {
		*seq++
		cid := fmt.Sprintf("c%d", *seq%100)
		ev := agent.AllEvent{Kind: agent.KindConversation, ID: fmt.Sprintf("ev-%d", *seq), ConversationID: cid, Seq: *seq,
			Date: time.Now().UTC(), Event: &agent.Event{Type: agent.EventAppendText, Text: "token "}}
		payload, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		rows[i] = eventRow{Seq: *seq, ID: ev.ID, ConversationID: &cid, CreatedAt: ev.Date, Type: ev.Kind, Payload: string(payload), Owner: "local"}
	}
	return rows
}

// packWriter commits one batch of rows per call in the given shape.
func packWriter(b *testing.B, db *sql.DB, shape string) func([]eventRow) {
	var args []any
	var blob []byte
	return func(rows []eventRow) {
		tx, err := db.BeginTx(b.Context(), nil)
		if err != nil {
			b.Fatal(err)
		}
		exec := func(q string, a ...any) {
			if _, err := tx.ExecContext(b.Context(), q, a...); err != nil {
				b.Fatal(err)
			}
		}
		args = args[:0]
		switch shape {
		case "rows":
			for i := range rows {
				r := &rows[i]
				args = append(args, r.Seq, r.ID, *r.ConversationID, r.CreatedAt, r.Type, r.Payload, r.Owner)
			}
			exec(prepInsertSQL(len(rows)), args...)
		case "pack", "pack+conv":
			blob = blob[:0]
			for i := range rows {
				r := &rows[i]
				blob = append(blob, byte(len(*r.ConversationID)))
				blob = binary.LittleEndian.AppendUint32(blob, uint32(len(r.Payload)))
				blob = append(blob, *r.ConversationID...)
				blob = append(blob, r.Payload...)
			}
			exec("INSERT INTO agent_event_pack (seq_lo, seq_hi, payload) VALUES (?, ?, ?)", rows[0].Seq, rows[len(rows)-1].Seq, blob)
			if shape == "pack+conv" {
				for i := range rows {
					args = append(args, *rows[i].ConversationID, rows[i].Seq)
				}
				exec("INSERT INTO agent_event_conv (conversation_id, seq) VALUES "+strings.TrimSuffix(strings.Repeat("(?,?),", len(rows)), ","), args...)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
