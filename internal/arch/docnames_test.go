package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goNames is what the module declares, as the doc may name it: "pkg.Name"
// for a package's top-level names, "Type.Member" and "pkg.Type.Member" for
// methods, fields (and their JSON keys) of a type, bare names for all of
// those, and the tests and benchmarks by name.
type goNames struct {
	pkgs, types, all, tests map[string]bool
}

func declared(t *testing.T) goNames {
	t.Helper()
	root := filepath.Join("..", "..")
	n := goNames{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	add := func(pkg, typ, name string) {
		n.all[name] = true
		if typ == "" {
			n.all[pkg+"."+name] = true
			return
		}
		n.all[typ+"."+name] = true
		n.all[pkg+"."+typ+"."+name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := strings.TrimSuffix(f.Name.Name, "_test")
		n.pkgs[pkg] = true
		test := strings.HasSuffix(path, "_test.go")
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv == nil {
					if test && (strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Benchmark")) {
						n.tests[name] = true
					}
					add(pkg, "", name)
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if g, ok := recv.(*ast.IndexExpr); ok {
					recv = g.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					add(pkg, id.Name, name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, id := range s.Names {
							add(pkg, "", id.Name)
						}
					case *ast.TypeSpec:
						typ := s.Name.Name
						n.types[typ] = true
						add(pkg, "", typ)
						var fields *ast.FieldList
						switch x := s.Type.(type) {
						case *ast.StructType:
							fields = x.Fields
						case *ast.InterfaceType:
							fields = x.Methods
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							for _, id := range fl.Names {
								add(pkg, typ, id.Name)
							}
							if fl.Tag != nil {
								tag, _ := strconv.Unquote(fl.Tag.Value)
								for _, key := range []string{"json", "wire"} {
									if k, _, _ := strings.Cut(reflect.StructTag(tag).Get(key), ","); k != "" && k != "-" {
										add(pkg, typ, k)
									}
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDocNames: every test, file and Go name docs/ARCHITECTURE.md names
// exists. A claim "X is checked by TestY" or "the seam is store/sqlitew.go
// openSQLiteWriter" goes false first by a rename or a deletion; this test
// fails then, so the doc is mended with the code.
func TestDocNames(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := declared(t)
	js := jsSources(t, filepath.Join(root, "assets", "src"))

	// Tests and benchmarks, wherever they are named.
	for _, m := range regexp.MustCompile(`\b(?:Test|Benchmark)[A-Z][A-Za-z0-9_]*`).FindAllString(string(doc), -1) {
		if !names.tests[m] {
			t.Errorf("docs/ARCHITECTURE.md names %s, which is no test of the module", m)
		}
	}
	// Files: a path ending in a source extension, from the module's root,
	// internal/ or assets/src/.
	file := regexp.MustCompile(`(?:^|[\s(` + "`" + `])((?:[a-z0-9_-]+/)*[a-z0-9_*-]+\.(?:go|templ|js|md))\b`)
	for _, m := range file.FindAllStringSubmatch(string(doc), -1) {
		p := m[1]
		found := false
		for _, dir := range []string{"", "internal", filepath.Join("assets", "src"), "docs"} {
			if hits, _ := filepath.Glob(filepath.Join(root, dir, p)); len(hits) > 0 {
				found = true
			}
		}
		if !found && !strings.Contains(p, "/") {
			// A bare file name: in some package of the module.
			hits, _ := filepath.Glob(filepath.Join(root, "*", "*", p))
			more, _ := filepath.Glob(filepath.Join(root, "*", p))
			found = len(hits)+len(more) > 0
		}
		if !found {
			t.Errorf("docs/ARCHITECTURE.md names the file %s, which does not exist", p)
		}
	}
	// Go names in code spans: a qualified name whose qualifier is a package
	// or a type of the module (pkg.Name, Type.Member, pkg.Type.Member) must
	// be declared; a bare identifier in camelCase must be declared in Go or
	// defined in the UI's JS.
	span := regexp.MustCompile("`([^`]+)`")
	qualified := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	camel := regexp.MustCompile(`^[a-z]+[A-Z][A-Za-z0-9]*$|^[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*$`)
	// A span in double backticks (`` `wire:"…"` ``) holds backticks; drop it.
	// The package map's fence is no span either.
	spans := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(string(doc), "")
	spans = regexp.MustCompile("``.*?``").ReplaceAllString(spans, "")
	for _, m := range span.FindAllStringSubmatch(spans, -1) {
		s := strings.Join(strings.Fields(m[1]), " ")
		if i := strings.IndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
			s = s[:i] // agent.Scope(ctx) names agent.Scope
		}
		switch {
		case external[s] || file.MatchString(" "+s):
			// another project's name, or a file (checked above)
		case qualified.MatchString(s):
			head, _, _ := strings.Cut(s, ".")
			if !names.pkgs[head] && !names.types[head] {
				continue // a column, a file, a JS object: not a Go name
			}
			last := s[strings.LastIndexByte(s, '.')+1:]
			inJS := regexp.MustCompile(`\b`+head+`\b`).MatchString(js) && regexp.MustCompile(`\b`+last+`\b`).MatchString(js)
			if !names.all[s] && !inJS {
				t.Errorf("docs/ARCHITECTURE.md names %s, which the module does not declare", s)
			}
		case camel.MatchString(s):
			if !names.all[s] && !regexp.MustCompile(`\b`+s+`\b`).MatchString(js) {
				t.Errorf("docs/ARCHITECTURE.md names %s, which neither the Go code nor assets/src declares", s)
			}
		}
	}
}

// external are the names of other projects' protocols and libraries the
// doc uses.
var external = map[string]bool{
	"useChat":           true, // the AI SDK's React hook
	"requestedSchema":   true, // MCP elicitation
	"elicitationId":     true,
	"relatedRequestId":  true, // the MCP SDKs'
	"TokenStore":        true, // mcp-go's
	"resubscribeTask":   true, // @a2a-js/sdk's client
	"reconnectToStream": true, // the AI SDK's chat transport
	"HttpAgent":         true, // @ag-ui/client's
}

func jsSources(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".js") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
