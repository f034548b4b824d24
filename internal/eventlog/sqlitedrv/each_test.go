package sqlitedrv_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// each runs Each on db's one connection and collects seq and text of every
// row until stop (0: all).
func each(t *testing.T, ctx context.Context, db *sql.DB, stop int, query string, args ...any) ([]int64, []string, error) {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var seqs []int64
	var texts []string
	err = conn.Raw(func(dc any) error {
		return dc.(*sqlitedrv.Conn).Each(ctx, query, args, func(r sqlitedrv.Row) error {
			seqs = append(seqs, r.Int64(0))
			s := string(r.Text(1))
			if r.Null(1) {
				s = "NULL"
			}
			texts = append(texts, s)
			if len(seqs) == stop {
				return sqlitedrv.ErrStop
			}
			return nil
		})
	})
	return seqs, texts, err
}

// Each reads the rows QueryContext reads, binds as it binds, stops on
// ErrStop, returns the callback's error, runs its statement again from
// the cache, and refuses a text of two statements.
func TestEachReadsWhatQueryReads(t *testing.T) {
	ours, theirs := both(t, dbPath(t))
	exec(t, theirs, `CREATE TABLE ev (seq INTEGER PRIMARY KEY, conv TEXT, payload TEXT)`)
	for i := 1; i <= 50; i++ {
		var payload any = fmt.Sprintf(`{"n":%d,"s":"é\u0000x"}`, i)
		if i == 7 {
			payload = nil
		}
		exec(t, theirs, `INSERT INTO ev VALUES (?, ?, ?)`, i, fmt.Sprint("c", i%2), payload)
	}
	const q = `SELECT seq, payload FROM ev WHERE seq > ? AND conv = ? ORDER BY seq`
	rows, err := theirs.Query(q, int64(3), "c1")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for rows.Next() {
		var seq int64
		var p sql.NullString
		if err := rows.Scan(&seq, &p); err != nil {
			t.Fatal(err)
		}
		if !p.Valid {
			p.String = "NULL"
		}
		want = append(want, fmt.Sprint(seq, " ", p.String))
	}
	rows.Close()
	s0 := stats(t, ours)
	for round := range 3 { // the third from the cached statement (cached on its second compile)
		seqs, texts, err := each(t, t.Context(), ours, 0, q, int64(3), "c1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := range seqs {
			got = append(got, fmt.Sprint(seqs[i], " ", texts[i]))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: got %q\nwant %q", round, got, want)
		}
	}
	if s := stats(t, ours); s.Compiled-s0.Compiled != 2 || s.Reused-s0.Reused != 1 {
		t.Errorf("stats %+v: want the statement compiled twice, reused once", s)
	}
	if seqs, _, err := each(t, t.Context(), ours, 3, q, int64(0), "c0"); err != nil || fmt.Sprint(seqs) != "[2 4 6]" {
		t.Errorf("stopped after 3: %v, %v", seqs, err)
	}
	boom := errors.New("boom")
	conn, _ := ours.Conn(t.Context())
	err = conn.Raw(func(dc any) error {
		return dc.(*sqlitedrv.Conn).Each(t.Context(), q, []any{int64(0), "c0"}, func(sqlitedrv.Row) error { return boom })
	})
	conn.Close()
	if !errors.Is(err, boom) {
		t.Errorf("callback's error: got %v", err)
	}
	if _, _, err := each(t, t.Context(), ours, 0, `SELECT 1, 'a'; SELECT 2, 'b'`); err == nil {
		t.Error("two statements: no error")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := each(t, ctx, ours, 0, q, int64(0), "c0"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}
	// The connection is still good after all of it.
	if seqs, _, err := each(t, t.Context(), ours, 0, q, int64(45), "c0"); err != nil || fmt.Sprint(seqs) != "[46 48 50]" {
		t.Errorf("after: %v, %v", seqs, err)
	}
}
