package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// unsafeAllowed are the functions of the storage engine that may use
// package unsafe, by file (from the module root) and function: the
// driver's calls into SQLite's C memory and function pointers, and the
// store's two views of an event's JSON without a copy (docs/store.md).
// Each of the driver's leans on modernc internals is pinned by
// sqlitedrv's TestModerncPinned.
var unsafeAllowed = map[string][]string{
	"internal/eventlog/sqlitedrv/statement.go": {"cFunc", "cPtr", "cMem", "bindText"},
	"internal/store/view.go":                   {"viewString", "viewBytes"},
	"internal/eventlog/view.go":                {"viewString"},
}

var linkname = regexp.MustCompile(`(?m)^\s*//go:linkname`)

// unsafeRoots are the packages the rule covers, with their subpackages.
var unsafeRoots = []string{"internal/store", "internal/eventlog"}

// TestUnsafeOnlyInTheDriver: no use of unsafe in the store or the engine
// outside unsafeAllowed (STYLE 20: never reach into a dependency's
// internals for a few percent), and no go:linkname anywhere in the module.
func TestUnsafeOnlyInTheDriver(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	used := map[string]bool{} // file + " " + func
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == "testdata" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if linkname.Match(src) {
			t.Errorf("%s: go:linkname reaches into another package's internals", rel)
		}
		covered := false
		for _, r := range unsafeRoots {
			if strings.HasPrefix(rel, r+"/") {
				covered = true
			}
		}
		if !covered || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		name := ""
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "unsafe" {
				name = "unsafe"
				if im.Name != nil {
					name = im.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		for _, decl := range f.Decls {
			fn, _ := decl.(*ast.FuncDecl)
			ast.Inspect(decl, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != name {
					return true
				}
				where := "package level"
				if fn != nil {
					where = fn.Name.Name
				}
				allowed := false
				for _, a := range unsafeAllowed[rel] {
					allowed = allowed || a == where
				}
				if !allowed {
					t.Errorf("%s: %s uses unsafe.%s: only the documented driver calls may (unsafeAllowed, docs/store.md)", fset.Position(sel.Pos()), where, sel.Sel.Name)
				}
				used[rel+" "+where] = true
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, fns := range unsafeAllowed {
		for _, fn := range fns {
			if !used[file+" "+fn] {
				t.Errorf("%s %s no longer uses unsafe: drop it from unsafeAllowed and docs/store.md", file, fn)
			}
		}
	}
}
