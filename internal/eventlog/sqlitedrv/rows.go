package sqlitedrv

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// rows are the rows of a query, its statement busy until Close.
type rows struct {
	c       *Conn
	st      *statement // nil for a text without a statement
	ctx     context.Context
	cols    []string
	decl    []string // upper-case declared types, read on first need
	declOK  []bool
	pending bool // the first row, stepped by QueryContext, is not read yet
	read    bool // Next was called
	done    bool
}

func newRows(ctx context.Context, st *statement, row bool) *rows {
	c := st.c
	n := int(lib.Xsqlite3_column_count(c.tls, st.p))
	r := &rows{c: c, st: st, ctx: ctx, cols: make([]string, n), decl: make([]string, n), declOK: make([]bool, n), pending: row, done: !row}
	for i := range r.cols {
		r.cols[i] = libc.GoString(lib.Xsqlite3_column_name(c.tls, st.p, int32(i)))
	}
	return r
}

func (r *rows) Columns() []string { return r.cols }

// Close releases the statement for its next use.
func (r *rows) Close() error {
	if r.st != nil {
		r.st.release()
		r.st = nil
	}
	return nil
}

// Next reads the next row into dest: INTEGER as int64, REAL as float64,
// BLOB as []byte (a nil one when empty), NULL as nil, TEXT as string, or as
// time.Time when its column is declared DATE, DATETIME or TIMESTAMP and the
// text parses (see parseTime), as glebarez/go-sqlite reads them.
func (r *rows) Next(dest []driver.Value) error {
	r.read = true
	if r.st == nil {
		return io.EOF
	}
	if r.pending {
		r.pending = false
	} else if !r.done {
		row, err := r.st.step(r.ctx.Done())
		if err != nil {
			return ctxErr(r.ctx, err)
		}
		r.done = !row
	}
	if r.done {
		return io.EOF
	}
	if len(dest) != len(r.cols) {
		return fmt.Errorf("sqlitedrv: Next: %d destination values for %d columns", len(dest), len(r.cols))
	}
	tls, p := r.c.tls, r.st.p
	for i := range dest {
		col := int32(i)
		switch lib.Xsqlite3_column_type(tls, p, col) {
		case lib.SQLITE_INTEGER:
			dest[i] = lib.Xsqlite3_column_int64(tls, p, col)
		case lib.SQLITE_FLOAT:
			dest[i] = lib.Xsqlite3_column_double(tls, p, col)
		case lib.SQLITE_TEXT:
			s := string(columnBytes(tls, p, col, lib.Xsqlite3_column_text(tls, p, col)))
			switch r.declType(i) {
			case "DATE", "DATETIME", "TIMESTAMP":
				dest[i] = parseTime(s)
			default:
				dest[i] = s
			}
		case lib.SQLITE_BLOB:
			var v []byte // an empty blob is a nil []byte
			if b := columnBytes(tls, p, col, lib.Xsqlite3_column_blob(tls, p, col)); len(b) > 0 {
				v = append(v, b...)
			}
			dest[i] = v
		default:
			dest[i] = nil
		}
	}
	return nil
}

// columnBytes is the C memory at ptr of column col's length: valid until
// the statement steps or resets.
func columnBytes(tls *libc.TLS, p uintptr, col int32, ptr uintptr) []byte {
	n := lib.Xsqlite3_column_bytes(tls, p, col)
	if ptr == 0 || n <= 0 {
		return nil
	}
	return cMem(ptr, int(n))
}

// declType is column i's declared type (sqlite3_column_decltype) in upper
// case: "" for an expression.
func (r *rows) declType(i int) string {
	if !r.declOK[i] {
		r.decl[i] = strings.ToUpper(libc.GoString(lib.Xsqlite3_column_decltype(r.c.tls, r.st.p, int32(i))))
		r.declOK[i] = true
	}
	return r.decl[i]
}

// ColumnTypeDatabaseTypeName is the declared type, upper case.
func (r *rows) ColumnTypeDatabaseTypeName(i int) string {
	if r.st == nil {
		return ""
	}
	return r.declType(i)
}

// ColumnTypeNullable: any SQLite column may hold NULL, as glebarez says.
func (r *rows) ColumnTypeNullable(int) (nullable, ok bool) { return true, true }

// storage is column i's storage class in the current row. Before Next, as
// with glebarez/go-sqlite (whose statement has not stepped then), it is
// NULL: the column types gorm reads before scanning are those.
func (r *rows) storage(i int) int32 {
	if !r.read || r.done || r.st == nil {
		return lib.SQLITE_NULL
	}
	return lib.Xsqlite3_column_type(r.c.tls, r.st.p, int32(i))
}

// ColumnTypeScanType follows glebarez/go-sqlite: by the storage class of
// the current row and the declared type.
func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	switch r.storage(i) {
	case lib.SQLITE_INTEGER:
		if strings.EqualFold(r.declType(i), "boolean") {
			return reflect.TypeFor[bool]()
		}
		return reflect.TypeFor[int64]()
	case lib.SQLITE_FLOAT:
		return reflect.TypeFor[float64]()
	case lib.SQLITE_TEXT:
		switch r.declType(i) {
		case "DATE", "DATETIME", "TIME", "TIMESTAMP":
			return reflect.TypeFor[time.Time]()
		}
		return reflect.TypeFor[string]()
	case lib.SQLITE_BLOB:
		return reflect.TypeFor[[][]byte]() // sic: glebarez's SliceOf([]byte)
	}
	return nil
}

// ColumnTypeLength follows glebarez/go-sqlite.
func (r *rows) ColumnTypeLength(i int) (int64, bool) {
	switch r.storage(i) {
	case lib.SQLITE_TEXT, lib.SQLITE_BLOB:
		return math.MaxInt64, true
	}
	return 0, false
}

// parseFormats are the text forms of a time that parseTime reads (after
// time.Time.String's): SQLite's time values 1 to 7, with or without a
// zone. The first is TimeFormat.
var parseFormats = []string{
	TimeFormat,
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseTime reads s as glebarez/go-sqlite does: as time.Time.String wrote
// it (a monotonic "m=…" dropped), or, a trailing "Z" dropped, in one of
// parseFormats (in UTC without a zone). Text that is none of them stays
// the string.
func parseTime(s string) any {
	t := s
	if i := strings.Index(t, "m="); i > 0 {
		t = t[:i]
	}
	if v, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", strings.TrimSpace(t)); err == nil {
		return v
	}
	t = strings.TrimSuffix(s, "Z")
	for _, f := range parseFormats {
		if v, err := time.ParseInLocation(f, t, time.UTC); err == nil {
			return v
		}
	}
	return s
}

// Error is an SQLite error: its extended result code and message.
type Error struct {
	code int
	msg  string
	ctx  error // the context error an interrupt answered
}

func (e *Error) Error() string { return e.msg }

// Code is the extended result code (modernc.org/sqlite/lib's SQLITE_…).
func (e *Error) Code() int { return e.code }

// Unwrap is the context's error when a cancelled context interrupted the
// statement.
func (e *Error) Unwrap() error { return e.ctx }

var errNoMem = errors.New("sqlitedrv: out of memory")

// errorOf is the error of result code rc, with the connection's message,
// worded as glebarez/go-sqlite words it.
func (c *Conn) errorOf(rc int32) error {
	str := libc.GoString(lib.Xsqlite3_errstr(c.tls, rc))
	msg := libc.GoString(lib.Xsqlite3_errmsg(c.tls, c.db))
	busy := ""
	if rc == lib.SQLITE_BUSY {
		busy = " (SQLITE_BUSY)"
	}
	if msg == str {
		return &Error{code: int(rc), msg: fmt.Sprintf("%s (%d)%s", str, rc, busy)}
	}
	return &Error{code: int(rc), msg: fmt.Sprintf("%s: %s (%d)%s", str, msg, rc, busy)}
}

// ctxErr ties an interrupt to the context that caused it.
func ctxErr(ctx context.Context, err error) error {
	if e, ok := err.(*Error); ok && e.code&0xff == lib.SQLITE_INTERRUPT && ctx.Err() != nil {
		e.ctx = ctx.Err()
	}
	return err
}
