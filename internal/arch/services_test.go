package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
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

// TestNoAbilityAssertions: neither the centre nor the telemetry decorators
// discover an ability by a type assertion to an anonymous interface
// (x.(interface{ M() })); a service names what it needs as a constructor
// argument or a Config field instead, which app.Wire fills at start.
func TestNoAbilityAssertions(t *testing.T) {
	for _, dir := range []string{"agent", "telemetry"} {
		for name, f := range centreFiles(t, dir) {
			ast.Inspect(f, func(n ast.Node) bool {
				if ta, ok := n.(*ast.TypeAssertExpr); ok {
					if _, anon := ta.Type.(*ast.InterfaceType); anon {
						t.Errorf("internal/%s/%s asserts an anonymous interface: take the ability as a constructor argument or a Config field", dir, name)
					}
				}
				return true
			})
		}
	}
}
