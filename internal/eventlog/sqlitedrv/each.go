package sqlitedrv

import (
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// Row is the current row of Each's callback. What it returns of a column
// is valid only until the callback returns.
type Row struct {
	tls *libc.TLS
	p   uintptr
}

// Int64 is column col as an integer (SQLite's conversion of other types).
func (r Row) Int64(col int) int64 { return lib.Xsqlite3_column_int64(r.tls, r.p, int32(col)) }

// Null reports whether column col is NULL.
func (r Row) Null(col int) bool {
	return lib.Xsqlite3_column_type(r.tls, r.p, int32(col)) == lib.SQLITE_NULL
}

// Text is column col's bytes as text, in SQLite's memory: valid only until
// the callback returns (copy what is kept), nil for NULL or empty text.
func (r Row) Text(col int) []byte {
	return columnBytes(r.tls, r.p, int32(col), lib.Xsqlite3_column_text(r.tls, r.p, int32(col)))
}

// ErrStop, returned by Each's callback, ends the rows without an error.
var ErrStop = errors.New("sqlitedrv: stop")

// Each runs query, one statement, with args (driver values: int64,
// float64, bool, string, []byte, time.Time or nil, bound as QueryContext
// binds them) and calls fn with each row in turn, reading nothing it is not
// asked for: no driver.Value per column, no copy of a column fn does not
// keep. A hot read (a replay of many rows) reaches it through
// (*sql.Conn).Raw. fn's error ends it and is returned (nil for ErrStop);
// ctx ends it as it ends QueryContext.
func (c *Conn) Each(ctx context.Context, query string, args []any, fn func(Row) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st, tail, err := c.statement(query, false)
	if err != nil {
		return ctxErr(ctx, err)
	}
	if st == nil || tail != "" {
		if st != nil {
			st.release()
		}
		return errors.New("sqlitedrv: Each runs exactly one statement")
	}
	defer st.release()
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	if err := st.bind(nv); err != nil {
		return err
	}
	st.busy = true
	r := Row{tls: c.tls, p: st.p}
	for done := ctx.Done(); ; {
		row, err := st.step(done)
		if err != nil {
			return ctxErr(ctx, err)
		}
		if !row {
			return nil
		}
		if err := fn(r); err != nil {
			if err == ErrStop {
				return nil
			}
			return err
		}
	}
}
