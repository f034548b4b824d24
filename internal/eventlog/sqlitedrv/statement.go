package sqlitedrv

import (
	"database/sql/driver"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// statement is one compiled statement (sqlite3_stmt) of a connection.
type statement struct {
	c      *Conn
	p      uintptr // sqlite3_stmt*
	text   string
	params []param // by parameter index - 1
	cached bool    // kept in c.stmts; else finalized on release
	busy   bool    // open rows step it: a second use compiles another
}

// param is how a parameter finds its argument: by Ordinal, or by Name
// (":name", "@name", "$name").
type param struct {
	ordinal int
	name    string
}

// statement returns a statement of query ready to bind, and the text after
// its first statement ("" when nothing but space follows). A cached,
// idle statement of the same text is taken as it is; else the first
// statement of query is compiled, and cached unless once is set, another
// statement of the text is busy, text follows it, the text is longer
// than cacheTextMax, or this is the first time the text is compiled
// (seenMax: one-off texts never enter the cache). The statement is nil
// when query holds no statement (only space or a comment).
func (c *Conn) statement(query string, once bool) (*statement, string, error) {
	st := c.stmts[query]
	if st != nil && !st.busy {
		c.stats.Reused++
		return st, "", nil
	}
	keep := !once && st == nil && len(query) <= cacheTextMax && c.seenBefore(query)
	p, tail, err := c.compile(query, keep)
	if err != nil || p == 0 {
		return nil, tail, err
	}
	if tail != "" {
		keep = false
	}
	st = &statement{c: c, p: p, text: query, cached: keep}
	st.params = make([]param, lib.Xsqlite3_bind_parameter_count(c.tls, p))
	for i := range st.params {
		st.params[i] = newParam(i+1, libc.GoString(lib.Xsqlite3_bind_parameter_name(c.tls, p, int32(i+1))))
	}
	if keep {
		c.keep(st)
	}
	return st, tail, nil
}

// textSeed seeds the hashes of seen texts.
var textSeed = maphash.MakeSeed()

// seenBefore reports whether query was compiled before and not cached,
// and remembers it when not: a text is cached on its second compile. A
// collision of hashes caches a text on its first: harmless.
func (c *Conn) seenBefore(query string) bool {
	h := maphash.String(textSeed, query)
	if _, ok := c.seen[h]; ok {
		delete(c.seen, h)
		return true
	}
	if len(c.seen) >= seenMax {
		clear(c.seen)
	}
	c.seen[h] = struct{}{}
	return false
}

func newParam(index int, name string) param {
	if name == "" {
		return param{ordinal: index}
	}
	if name[0] == '?' || name[0] == '$' {
		if n, err := strconv.Atoi(name[1:]); err == nil {
			return param{ordinal: n} // ?NNN, $NNN
		}
	}
	return param{name: name[1:]}
}

// keep caches st, finalizing the oldest idle statement when the cache is
// full.
func (c *Conn) keep(st *statement) {
	if len(c.stmts) >= cacheSize {
		for i, text := range c.order {
			old := c.stmts[text]
			if old.busy {
				continue
			}
			lib.Xsqlite3_finalize(c.tls, old.p)
			delete(c.stmts, text)
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.stmts[st.text] = st
	c.order = append(c.order, st.text)
}

// compile compiles the first statement of query (sqlite3_prepare_v3) and
// returns it (0 for none) and the rest of the text, "" if only space.
func (c *Conn) compile(query string, persistent bool) (uintptr, string, error) {
	n := len(query)
	if n >= math.MaxInt32-32 {
		return 0, "", fmt.Errorf("sqlitedrv: statement of %d bytes", n)
	}
	// One allocation: the statement pointer, the tail pointer, the text.
	buf := libc.Xmalloc(c.tls, libc.Tsize_t(16+n+1))
	if buf == 0 {
		return 0, "", errNoMem
	}
	defer libc.Xfree(c.tls, buf)
	ztext := buf + 16
	text := cMem(ztext, n+1)
	copy(text, query)
	text[n] = 0
	var flags uint32
	if persistent {
		flags = lib.SQLITE_PREPARE_PERSISTENT
	}
	rc := lib.Xsqlite3_prepare_v3(c.tls, c.db, ztext, int32(n), flags, buf, buf+8)
	if rc != lib.SQLITE_OK {
		return 0, "", c.errorOf(rc)
	}
	c.stats.Compiled++
	p := *(*uintptr)(cPtr(buf))
	used := int(*(*uintptr)(cPtr(buf + 8)) - ztext)
	tail := query[min(max(used, 0), n):]
	if strings.TrimSpace(tail) == "" {
		tail = ""
	}
	return p, tail, nil
}

// release makes st ready for its next use: reset, its bindings cleared (no
// argument stays held), finalized unless cached.
func (st *statement) release() {
	tls := st.c.tls
	lib.Xsqlite3_reset(tls, st.p)
	lib.Xsqlite3_clear_bindings(tls, st.p)
	st.busy = false
	if !st.cached {
		lib.Xsqlite3_finalize(tls, st.p)
		st.p = 0
	}
}

// step runs st to its next row; done ends it (see setDone).
func (st *statement) step(done <-chan struct{}) (row bool, err error) {
	if done != st.c.done {
		st.c.setDone(done)
	}
	switch rc := lib.Xsqlite3_step(st.c.tls, st.p); rc {
	case lib.SQLITE_ROW:
		return true, nil
	case lib.SQLITE_DONE:
		return false, nil
	default:
		return false, st.c.errorOf(rc)
	}
}

// bind binds each parameter of st to its argument.
func (st *statement) bind(args []driver.NamedValue) error {
	for i, prm := range st.params {
		v, ok := argument(args, prm)
		if !ok {
			if prm.name != "" {
				return fmt.Errorf("sqlitedrv: missing named argument %q", prm.name)
			}
			return fmt.Errorf("sqlitedrv: missing argument with index %d", prm.ordinal)
		}
		if err := st.bindValue(int32(i+1), v); err != nil {
			return err
		}
	}
	return nil
}

func argument(args []driver.NamedValue, prm param) (any, bool) {
	if prm.name == "" {
		if k := prm.ordinal - 1; k >= 0 && k < len(args) && args[k].Ordinal == prm.ordinal {
			return args[k].Value, true
		}
	}
	for _, a := range args {
		if prm.name != "" && a.Name == prm.name || prm.name == "" && a.Ordinal == prm.ordinal {
			return a.Value, true
		}
	}
	return nil, false
}

// TimeFormat is how a time.Time argument is written: the first of
// glebarez/go-sqlite's formats, which it writes too.
const TimeFormat = "2006-01-02 15:04:05.999999999-07:00"

func (st *statement) bindValue(i int32, v any) error {
	tls, p := st.c.tls, st.p
	var rc int32
	switch v := v.(type) {
	case nil:
		rc = lib.Xsqlite3_bind_null(tls, p, i)
	case int64:
		rc = lib.Xsqlite3_bind_int64(tls, p, i, v)
	case float64:
		rc = lib.Xsqlite3_bind_double(tls, p, i, v)
	case bool:
		var n int64
		if v {
			n = 1
		}
		rc = lib.Xsqlite3_bind_int64(tls, p, i, n)
	case string:
		return st.bindText(i, v)
	case time.Time:
		return st.bindText(i, v.Format(TimeFormat))
	case []byte:
		switch {
		case v == nil:
			rc = lib.Xsqlite3_bind_null(tls, p, i)
		case len(v) == 0:
			rc = lib.Xsqlite3_bind_zeroblob(tls, p, i, 0)
		default:
			m, err := st.copyC(v)
			if err != nil {
				return err
			}
			rc = lib.Xsqlite3_bind_blob(tls, p, i, m, int32(len(v)), freeC)
		}
	default:
		return fmt.Errorf("sqlitedrv: invalid driver.Value type %T", v)
	}
	if rc != lib.SQLITE_OK {
		return st.c.errorOf(rc)
	}
	return nil
}

func (st *statement) bindText(i int32, s string) error {
	tls, p := st.c.tls, st.p
	var rc int32
	if len(s) == 0 {
		rc = lib.Xsqlite3_bind_text(tls, p, i, emptyC, 0, 0) // SQLITE_STATIC
	} else {
		m, err := st.copyC(unsafe.Slice(unsafe.StringData(s), len(s)))
		if err != nil {
			return err
		}
		// SQLite frees m (freeC) once it is rebound, cleared or finalized,
		// and also if the bind fails.
		rc = lib.Xsqlite3_bind_text(tls, p, i, m, int32(len(s)), freeC)
	}
	if rc != lib.SQLITE_OK {
		return st.c.errorOf(rc)
	}
	return nil
}

// copyC copies b into memory of the SQLite heap.
func (st *statement) copyC(b []byte) (uintptr, error) {
	if len(b) >= math.MaxInt32 {
		return 0, fmt.Errorf("sqlitedrv: argument of %d bytes", len(b))
	}
	m := libc.Xmalloc(st.c.tls, libc.Tsize_t(len(b)))
	if m == 0 {
		return 0, errNoMem
	}
	copy(cMem(m, len(b)), b)
	return m, nil
}

// freeC is libc's free as an SQLite destructor.
var freeC = cFunc(libc.Xfree)

// cFunc is Go function f as a C function pointer in modernc's calling
// convention: the first word of the Go func value, which the transpiled C
// turns back into a func value to call it (modernc.org/sqlite's own
// cFuncPointer does the same). It is one of the modernc internals the
// driver leans on; pin_test.go holds them.
func cFunc[F any](f F) uintptr { return *(*uintptr)(unsafe.Pointer(&f)) }

// emptyC is a C "" for empty text, never freed.
var emptyC = func() uintptr {
	p, err := libc.CString("")
	if err != nil {
		panic(err)
	}
	return p
}()

// cPtr is C memory's address p as a pointer. The memory is SQLite's heap
// (modernc.org/libc's allocator), never Go's: the garbage collector ignores
// it and nothing moves it.
func cPtr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cMem is the n bytes of C memory at p.
func cMem(p uintptr, n int) []byte { return unsafe.Slice((*byte)(cPtr(p)), n) }
