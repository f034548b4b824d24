package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/protocol"
)

// protocolOps are the op names internal/protocol declares (its Op…
// constants).
func protocolOps(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../protocol", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !strings.HasPrefix(n.Name, "Op") || i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							ops[v] = true
						}
					}
				}
			}
		}
	}
	if len(ops) < 30 {
		t.Fatalf("found only %d Op constants in internal/protocol", len(ops))
	}
	return ops
}

// TestOpTable: every WebSocket op but the connection's own is an op of
// the table (op.go), and every op of the table is an op the protocol
// names: Decode hands every other op to the table, so one missing here
// would be an op nobody runs.
func TestOpTable(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	if len(s.ops) == 0 {
		t.Fatal("no op registered")
	}
	names := protocolOps(t)
	for name := range s.ops {
		if !names[name] {
			t.Errorf("op %q is in the table but internal/protocol has no Op constant for it", name)
		}
		if protocol.ConnectionOp(name) {
			t.Errorf("op %q is in the table and a connection op", name)
		}
	}
	for name := range names {
		if !protocol.ConnectionOp(name) && s.ops[name] == nil {
			t.Errorf("op %q of internal/protocol is neither a connection op nor in the table", name)
		}
	}
}

// notOps are the /agentik/ routes outside the op table, each with why:
// streams, replays, archives and the sign-in callback do not answer one
// JSON result.
var notOps = map[string]string{
	"GET /agentik/ws": "the WebSocket",
	"GET /agentik/conversations/{conversation_id}/events":        "SSE",
	"GET /agentik/conversations/{conversation_id}/events/replay": "a replay page, streamed",
	"GET /agentik/events":                                 "SSE",
	"GET /agentik/events/all":                             "SSE",
	"GET /agentik/events/replay":                          "a replay page, streamed",
	"GET /agentik/oauth/callback":                         "a browser's redirect",
	"GET /agentik/conversations/{conversation_id}/export": "a file",
	"GET /agentik/export":                                 "a file",
	"POST /agentik/import":                                "a file, read in parts",
	"GET /agentik/files/{file_id}/content":                "a file",
	"GET /agentik/audit/export":                           "a file (JSON Lines)",
	"GET /agentik/apps/view":                              "an MCP App's HTML page for a sandboxed frame, with its own CSP",
	"POST /agentik/signup":                                "public: no principal yet; it sets a session cookie",
	"POST /agentik/reset":                                 "public: a reset token, not a principal; it ends sessions",
	"/agentik/":                                           "the 404 of every other path",
}

// TestRoutesAreOps: every /agentik/ route of routes.go is an op of the
// table (s.op(…)) but the few of notOps, so a new JSON route cannot
// bypass the table, and every op of the table has a REST route.
func TestRoutesAreOps(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	routed := map[string]bool{}
	seen := 0
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		pattern, _ := strconv.Unquote(lit.Value)
		if !strings.Contains(pattern, "/agentik/") {
			return true
		}
		seen++
		if h, ok := call.Args[1].(*ast.CallExpr); ok {
			if hs, ok := h.Fun.(*ast.SelectorExpr); ok && hs.Sel.Name == "op" && len(h.Args) == 1 {
				if id, ok := h.Args[0].(*ast.Ident); ok {
					routed[id.Name] = true
				}
				if _, listed := notOps[pattern]; listed {
					t.Errorf("%s is an op but listed in notOps", pattern)
				}
				return true
			}
		}
		if _, ok := notOps[pattern]; !ok {
			t.Errorf("route %s is not an op of the table (s.op): declare it in the table, or list it in notOps with why", pattern)
		}
		return true
	})
	if seen < 40 {
		t.Fatalf("found only %d /agentik/ routes in routes.go; has the registration changed?", seen)
	}
	if len(routed) < 30 {
		t.Fatalf("found only %d ops routed through s.op", len(routed))
	}
}

// The browser UI (assets/src) speaks the WebSocket in JavaScript. Go owns
// the op names: every op the UI sends must be a connection op or one of
// the table, so a renamed or misspelt op fails here rather than in a
// browser.
func TestWebSendsOnlyTableOps(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	files, err := filepath.Glob("../../assets/src/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no UI sources found: %v", err)
	}
	request := regexp.MustCompile(`\.request\(\s*'([a-z_]+)'`)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range request.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !protocol.ConnectionOp(m[1]) && s.ops[m[1]] == nil {
				t.Errorf("%s sends op %q, which the protocol does not have", filepath.Base(f), m[1])
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d requests in the UI sources; has conn.request been renamed?", seen)
	}
}

func TestWildcards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"GET /agentik/users", nil},
		{"GET /agentik/users/{user_id}/keys/{key_id}", []string{"user_id", "key_id"}},
		{"GET /{$}", nil},
		{"GET /files/{path...}", []string{"path"}},
	} {
		got := wildcards(tc.pattern)
		if len(got) != len(tc.want) {
			t.Fatalf("wildcards(%q) = %v, want %v", tc.pattern, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("wildcards(%q) = %v, want %v", tc.pattern, got, tc.want)
			}
		}
	}
}
