package eventlog

import (
	"database/sql"
	"fmt"
	"strconv"
)

// RedactBatch is how many events Redact rewrites per query.
const RedactBatch = 500

// Redaction is the rewrite of one key's stored events in the caller's
// transaction (the store's delete of a conversation): Redact walks the
// key's seqs and rewrites the payload of each event the events table
// holds; the store says what a payload keeps.
type Redaction struct {
	Table *Table // the events table
	What  string // the key as errors name it ("conversation c1")
	// Seqs reads the key's seqs above after (by its run index, or plain
	// mode's index), at most want, and whether more are left.
	Seqs func(after int64, want int) (seqs []int64, more bool, err error)
	// Query and Exec run a statement in the caller's transaction, in its
	// dialect (the statements use ? placeholders).
	Query Query
	Exec  func(q string, args ...any) error
	// Rewrite returns a payload without its content (the payload itself
	// when it has none to lose: its row is left alone).
	Rewrite func(payload string) (string, error)
}

// Redact rewrites r's events, RedactBatch of the key's seqs at a time. It
// returns the seqs of the key that the events table does not hold: the
// delta log's, which the writer redacts once the transaction has
// committed.
func Redact(r Redaction) ([]int64, error) {
	t := r.Table
	seqCol, payloadCol := t.Columns[0], t.Columns[5]
	update := "UPDATE " + t.Name + " SET " + payloadCol + " = ? WHERE " + seqCol + " = ?"
	var side []int64
	for after, more := int64(0), true; more; {
		var (
			seqs []int64
			err  error
		)
		seqs, more, err = r.Seqs(after, RedactBatch)
		if err != nil {
			return nil, fmt.Errorf("redact %s: %w", r.What, err)
		}
		if len(seqs) == 0 {
			return side, nil
		}
		after = seqs[len(seqs)-1]
		rows, err := redactRows(r, seqs)
		if err != nil {
			return nil, fmt.Errorf("redact %s: %w", r.What, err)
		}
		k := 0 // rows and seqs are both ascending
		for _, row := range rows {
			for ; k < len(seqs) && seqs[k] < row.seq; k++ {
				side = append(side, seqs[k])
			}
			k++
			p, err := r.Rewrite(row.payload)
			if err != nil {
				return nil, fmt.Errorf("redact event %d: %w", row.seq, err)
			}
			if p == row.payload {
				continue
			}
			if err := r.Exec(update, p, row.seq); err != nil {
				return nil, fmt.Errorf("redact event %d: %w", row.seq, err)
			}
		}
		side = append(side, seqs[min(k, len(seqs)):]...)
	}
	return side, nil
}

type redactRow struct {
	seq     int64
	payload string
}

// redactRows reads the stored events of seqs (ascending), in seq order.
func redactRows(r Redaction, seqs []int64) ([]redactRow, error) {
	t := r.Table
	list := make([]byte, 0, 8*len(seqs))
	for i, s := range seqs {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, s, 10)
	}
	rows, err := r.Query("SELECT " + t.Columns[0] + ", " + t.Columns[5] + " FROM " + t.Name + " WHERE " + t.Columns[0] + " IN (" + string(list) + ") ORDER BY " + t.Columns[0])
	if err != nil {
		return nil, err
	}
	return scanRedactRows(rows)
}

func scanRedactRows(rows *sql.Rows) ([]redactRow, error) {
	defer rows.Close()
	var out []redactRow
	for rows.Next() {
		var row redactRow
		if err := rows.Scan(&row.seq, &row.payload); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
