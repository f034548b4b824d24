package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxRunnerMethods bounds the Runner's exported methods (DESIGN §12.0,
// STYLE 21): the Runner keeps the turn; a use case of another noun lives
// on that noun's service (docs/ARCHITECTURE.md "Services by noun").
const maxRunnerMethods = 40

// centreFiles parses the non-test files of internal/agent.
func centreFiles(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = f
	}
	return out
}

// TestRunnerKeepsTheTurn: agent.Runner has at most maxRunnerMethods
// exported methods.
func TestRunnerKeepsTheTurn(t *testing.T) {
	var methods []string
	for _, f := range centreFiles(t, "agent") {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 || !fn.Name.IsExported() {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok && id.Name == "Runner" {
				methods = append(methods, fn.Name.Name)
			}
		}
	}
	if len(methods) > maxRunnerMethods {
		t.Errorf("agent.Runner has %d exported methods, at most %d: put a use case that is not the turn's on its noun's service (%s)",
			len(methods), maxRunnerMethods, strings.Join(methods, ", "))
	}
}

// abilityAssertionAllowed are the type assertions TestNoAbilityAssertions
// lets stay, by "dir/file.go: type"; each says why it is no ability probe.
var abilityAssertionAllowed = map[string]string{
	// An op's input type reads or checks itself (server/op.go, declare):
	// a property of the request's own Go type, chosen where the op is
	// declared, not an ability of the store or the tools a request finds.
	"server/op.go: server.decoder": "the op input's own decoding",
	"server/op.go: server.checker": "the op input's own check",
	// A WebSocket's handler takes the end-of-request work of the
	// middleware (server/handover.go): a property of the ResponseWriters
	// between it and net/http, which it walks by their Unwrap.
	"server/handover.go: server.handOverer":      "a middleware's ResponseWriter hands over its end work",
	"server/handover.go: an anonymous interface": "the ResponseWriter chain's Unwrap (net/http's convention)",
}

// interfacesOf are the names of the interface types the non-test files
// of internal/dir declare.
func interfacesOf(t *testing.T, dir string) map[string]bool {
	out := map[string]bool{}
	for _, f := range centreFiles(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, sp := range g.Specs {
				if ts := sp.(*ast.TypeSpec); ts.Assign == 0 {
					if _, ok := ts.Type.(*ast.InterfaceType); ok {
						out[ts.Name.Name] = true
					}
				}
			}
		}
	}
	return out
}

// TestNoAbilityAssertions: neither the centre, nor the telemetry
// decorators, nor the server discover an ability by a type assertion (or
// a type switch case) to an interface internal/agent declares
// (st.(Brancher), s.(agent.UserStore)), to one the package itself or
// another package of internal/ declares (s.(cursorIndex), s.(a2a.KV)), or
// to an anonymous one (x.(interface{ M() })); a service names what it
// needs as a constructor argument or a Config field instead, which
// app.Wire fills at start.
func TestNoAbilityAssertions(t *testing.T) {
	ifaces := map[string]map[string]bool{} // by directory under internal/
	of := func(dir string) map[string]bool {
		if ifaces[dir] == nil {
			ifaces[dir] = interfacesOf(t, dir)
		}
		return ifaces[dir]
	}
	if a := of("agent"); !a["Store"] || !a["Brancher"] {
		t.Fatalf("found no agent.Store or agent.Brancher among internal/agent's interfaces (%d): the test reads nothing", len(a))
	}
	used := map[string]bool{}
	for _, dir := range []string{"agent", "telemetry", "server"} {
		for name, f := range centreFiles(t, dir) {
			pkgs := map[string]string{} // the file's name of an internal/ package: its directory
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				rel, ok := strings.CutPrefix(p, module+"internal/")
				if !ok {
					continue
				}
				local := path.Base(rel)
				if im.Name != nil {
					local = im.Name.Name
				}
				pkgs[local] = rel
			}
			// probe names the interface typ is, or "".
			probe := func(typ ast.Expr) string {
				switch x := typ.(type) {
				case *ast.InterfaceType:
					return "an anonymous interface"
				case *ast.Ident:
					if of(dir)[x.Name] {
						return path.Base(dir) + "." + x.Name
					}
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && pkgs[id.Name] != "" && of(pkgs[id.Name])[x.Sel.Name] {
						return id.Name + "." + x.Sel.Name
					}
				}
				return ""
			}
			check := func(typ ast.Expr) {
				what := probe(typ)
				if what == "" {
					return
				}
				key := dir + "/" + name + ": " + what
				if _, ok := abilityAssertionAllowed[key]; ok {
					used[key] = true
					return
				}
				t.Errorf("internal/%s/%s asserts %s: take the ability as a constructor argument or a Config field, which app.Wire fills", dir, name, what)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.TypeAssertExpr:
					if x.Type != nil { // nil: a type switch's x.(type), whose cases follow
						check(x.Type)
					}
				case *ast.TypeSwitchStmt:
					for _, s := range x.Body.List {
						for _, typ := range s.(*ast.CaseClause).List {
							check(typ)
						}
					}
				}
				return true
			})
		}
	}
	for key := range abilityAssertionAllowed {
		if !used[key] {
			t.Errorf("abilityAssertionAllowed has %q, which no file asserts: remove it", key)
		}
	}
}
