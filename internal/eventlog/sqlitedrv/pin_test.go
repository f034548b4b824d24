package sqlitedrv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// The driver leans on three things of modernc.org/sqlite and
// modernc.org/libc that their APIs do not promise:
//
//  1. a Go func value's first word is the C function pointer the
//     transpiled C calls back (cFunc: progressC, freeC);
//  2. the signatures SQLite calls those with: a progress handler
//     func(*libc.TLS, uintptr) int32, a destructor func(*libc.TLS, uintptr);
//  3. libc.Xmalloc's memory is outside Go's heap and never moves (cPtr,
//     cMem).
//
// Nothing else reaches into them (the WAL-buffer VFS, which called the unix
// VFS's methods through casts of its function pointers, is gone). An
// upgrade of either module must be reviewed against the three: the pins
// below fail until it is, and TestCFunctionPointers, TestCancel and
// TestValues check them at work.
var pinned = map[string]string{
	"modernc.org/sqlite": "v1.55.0",
	"modernc.org/libc":   "v1.74.1",
}

// TestModerncPinned fails when go.mod moves a module the driver leans on.
func TestModerncPinned(t *testing.T) {
	b, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && pinned[f[0]] != "" {
			got[f[0]] = f[1]
		}
	}
	for mod, want := range pinned {
		switch v := got[mod]; {
		case v == "":
			t.Errorf("%s is not in go.mod any more: drop its pin and what leaned on it", mod)
		case v != want:
			t.Errorf("%s is %s, the driver was reviewed against %s: check the three assumptions of pin_test.go "+
				"in the new version's sources (how the transpiled C calls xProgress and a destructor, libc's allocator), "+
				"run this package's tests, then move the pin", mod, v, want)
		}
	}
}

// TestCFunctionPointers: SQLite calls a Go func passed as cFunc with the
// arguments the driver's callbacks expect (assumptions 1 and 2): a
// destructor once with the memory it was given, a progress handler with
// its argument.
func TestCFunctionPointers(t *testing.T) {
	c, err := open("file:" + filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _, err := c.statement("SELECT ?1 || 'x'", true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.copyC([]byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	var freed []uintptr
	destroy := cFunc(func(tls *libc.TLS, p uintptr) {
		freed = append(freed, p)
		libc.Xfree(tls, p)
	})
	if rc := lib.Xsqlite3_bind_text(c.tls, st.p, 1, m, 3, destroy); rc != lib.SQLITE_OK {
		t.Fatalf("bind: %v", c.errorOf(rc))
	}
	var progressed []uintptr
	handler := cFunc(func(_ *libc.TLS, arg uintptr) int32 {
		progressed = append(progressed, arg)
		return 0
	})
	lib.Xsqlite3_progress_handler(c.tls, c.db, 1, handler, 4242)
	if rc := lib.Xsqlite3_step(c.tls, st.p); rc != lib.SQLITE_ROW {
		t.Fatalf("step: %v", c.errorOf(rc))
	}
	if got := libc.GoString(lib.Xsqlite3_column_text(c.tls, st.p, 0)); got != "abcx" {
		t.Errorf("the bound text reads back as %q, want abcx", got)
	}
	lib.Xsqlite3_progress_handler(c.tls, c.db, 0, 0, 0)
	st.release() // finalizes: the destructor runs
	if len(freed) != 1 || freed[0] != m {
		t.Errorf("destructor calls %v, want one with %#x", freed, m)
	}
	if len(progressed) == 0 || progressed[0] != 4242 {
		t.Errorf("progress handler calls %v, want some with 4242", progressed)
	}
}
