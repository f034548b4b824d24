package arch

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/agentik/agentik/"

// imports maps each package of the module (its path without the module
// prefix) to the module packages its non-test files import.
func imports(t *testing.T) map[string][]string {
	mod, _ := walkImports(t)
	return mod
}

// walkImports maps each package of the module to the module packages its
// non-test files import (mod) and to the other packages they import
// (ext: the standard library's and other modules', full paths).
func walkImports(t *testing.T) (mod, ext map[string][]string) {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	ext = map[string][]string{}
	fset := token.NewFileSet()
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
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			} else if !ok && !slices.Contains(ext[pkg], p) {
				ext[pkg] = append(ext[pkg], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(out, "internal/arch")
	return out, ext
}

// TestImportRules: the arrows point inward. Each rule is a claim of
// docs/ARCHITECTURE.md ("Packages: the centre and its adapters").
func TestImportRules(t *testing.T) {
	deps := imports(t)
	// allowed lists, for each package, the module packages it may import;
	// a package missing here fails the test, so a new package states its
	// place in the shape when it is added.
	centre := []string{"internal/agent"}
	stream := []string{"internal/agent", "internal/broker", "internal/sse", "internal/relay", "internal/protocol"}
	allowed := map[string][]string{
		"internal/agent":                   nil, // the centre: no module package (other modules: below)
		"internal/sse":                     nil, // stdlib only
		"internal/envvar":                  nil,
		"internal/secret":                  nil, // encryption at rest: stdlib only
		"internal/password":                nil, // argon2id hashes of passwords: golang.org/x/crypto only
		"internal/llm/demo":                nil, // the --demo model: stdlib only
		"internal/testwait":                nil, // the tests' one wait for a condition: stdlib only
		"assets":                           nil,
		"internal/agent/agenttest":         centre,
		"internal/llm/llmtest":             {"internal/agent", "internal/llm/demo"}, // demo's deterministic embeddings
		"internal/knowledge":               centre,                                  // extraction and chunking
		"internal/knowledge/knowledgetest": nil,                                     // test documents: stdlib only
		"internal/broker":                  centre,
		"internal/protocol":                centre,
		"internal/store":                   {"internal/agent", "internal/eventlog", "internal/eventlog/sqlitedrv"},
		"internal/eventlog":                {"internal/agent", "internal/eventlog/sqlitedrv"}, // the store's engine and its driver: no meaning of records (TestEngineBehindTheStore)
		"internal/eventlog/sqlitedrv":      nil,                                               // the SQLite writer's driver: no module package
		"web":                              centre,
		"internal/llm":                     {"internal/agent", "internal/envvar"},
		"internal/tool":                    {"internal/agent", "internal/envvar", "internal/secret"},
		"internal/client":                  {"internal/agent", "internal/protocol"},
		"internal/archive":                 {"internal/agent", "internal/protocol"}, // the import/export formats, no HTTP
		"internal/telemetry":               {"internal/agent", "internal/broker"},
		"internal/webhook":                 {"internal/agent", "internal/broker"},
		// The protocols: the centre, the broker and the SSE writer; never
		// the server, the store or another adapter.
		"internal/relay":    stream,
		"internal/openai":   stream,
		"internal/aisdk":    stream,
		"internal/agui":     stream,
		"internal/mcpserve": stream,
		"internal/scim":     centre,                                           // SCIM 2.0: accounts and groups, no stream
		"internal/a2a":      append(slices.Clone(stream), "internal/webhook"), // push notifications are signed like webhooks
		// server mounts the protocols; app wires; the commands see all.
		"internal/server":      {"*"},
		"internal/app":         {"*"},
		"internal/app/apptest": {"internal/agent", "internal/app", "internal/llm/llmtest"}, // the wired server for protocol tests
		"cmd/agentik":          {"*"},
		"cmd/agentik-bench":    {"*"},
	}
	for pkg, ds := range deps {
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("%s is not placed in the shape: add it to allowed here and to the package map in docs/ARCHITECTURE.md", pkg)
			continue
		}
		if slices.Contains(ok, "*") {
			continue
		}
		for _, d := range ds {
			if !slices.Contains(ok, d) {
				t.Errorf("%s imports %s; it may import only %v", pkg, d, ok)
			}
		}
	}
	// The centre and the small packages use no other module but these
	// (the schedules' calendar rules): no database, HTTP framework or
	// telemetry library reaches the centre.
	_, ext := walkImports(t)
	stdlib := map[string][]string{
		"internal/agent":                   {"github.com/robfig/cron/v3", "github.com/teambition/rrule-go"}, // schedule.go
		"internal/sse":                     nil,
		"internal/envvar":                  nil,
		"internal/secret":                  nil,
		"internal/llm/demo":                nil,
		"internal/testwait":                nil,
		"internal/knowledge/knowledgetest": nil,
	}
	for pkg, ok := range stdlib {
		for _, d := range ext[pkg] {
			if strings.Contains(strings.Split(d, "/")[0], ".") && !slices.Contains(ok, d) {
				t.Errorf("%s imports %s; beside the standard library it may import only %v", pkg, d, ok)
			}
		}
	}
	// HTTP is the edges': the centre, the store, the broker, the formats
	// and the templates know none.
	for _, pkg := range []string{"internal/agent", "internal/store", "internal/broker", "internal/archive", "web"} {
		if slices.Contains(ext[pkg], "net/http") {
			t.Errorf("%s imports net/http", pkg)
		}
	}
	// The test fakes are linked by tests and the bench only, never by the
	// product (the --demo model is internal/llm/demo, not llmtest).
	for pkg, ds := range deps {
		for _, fake := range []string{"internal/llm/llmtest", "internal/agent/agenttest", "internal/knowledge/knowledgetest", "internal/app/apptest"} {
			if slices.Contains(ds, fake) && pkg != "cmd/agentik-bench" && pkg != "internal/app/apptest" {
				t.Errorf("%s imports the test fake %s", pkg, fake)
			}
		}
	}
	// Only the wiring and the commands import the server.
	for pkg, ds := range deps {
		if slices.Contains(ds, "internal/server") && pkg != "internal/app" && !strings.HasPrefix(pkg, "cmd/") {
			t.Errorf("%s imports internal/server", pkg)
		}
	}
}

// TestPackageMap: the package map in docs/ARCHITECTURE.md names every
// package of the module and no package that is gone.
func TestPackageMap(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/ARCHITECTURE.md has no package map (its first code block)")
	}
	entry := regexp.MustCompile(`(?m)^((?:cmd|internal|web|assets)[a-z0-9/_-]*)/ `)
	var named []string
	for _, m := range entry.FindAllStringSubmatch(block, -1) {
		named = append(named, m[1])
	}
	var have []string
	for pkg := range imports(t) {
		have = append(have, pkg)
	}
	sort.Strings(have)
	for _, pkg := range have {
		// A test helper package is named in its parent's entry.
		if strings.HasSuffix(pkg, "test") && slices.Contains(named, filepath.Dir(pkg)) {
			continue
		}
		if !slices.Contains(named, pkg) {
			t.Errorf("the package map in docs/ARCHITECTURE.md does not name %s/", pkg)
		}
	}
	for _, n := range named {
		if !slices.Contains(have, n) {
			t.Errorf("the package map in docs/ARCHITECTURE.md names %s/, which is not a package", n)
		}
	}
}

// TestCentreMap: internal/agent's doc.go names every file of the package.
func TestCentreMap(t *testing.T) {
	dir := filepath.Join("..", "agent")
	doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "_test.go") || name == "doc.go" {
			continue
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).Match(doc) {
			t.Errorf("internal/agent/doc.go does not name %s: add it to the map", name)
		}
	}
}

// TestOneSlot: a turn starts in one place, internal/agent/slot.go
// (docs/ARCHITECTURE.md "One turn at a time"). Only there is a turn
// registered in the runner (turns[id] = t) and its first record marked
// TurnStart; every other start calls claim and begin.
func TestOneSlot(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "agent", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	starts := regexp.MustCompile(`\.turns\[[^\]]+\]\s*=[^=]|\bTurn\s*(?:=|:)\s*TurnStart\b`)
	found := false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range starts.FindAll(src, -1) {
			if filepath.Base(f) != "slot.go" {
				t.Errorf("%s starts a turn (%q): only slot.go's claim and begin may", filepath.Base(f), m)
			} else {
				found = true
			}
		}
	}
	if !found {
		t.Error("slot.go no longer registers a turn or writes TurnStart: fix this test and docs/ARCHITECTURE.md")
	}
}

// TestEngineBehindTheStore: the store's engine (internal/eventlog and its
// driver) is imported by internal/store alone (DESIGN §12.0: no other
// package knows the speed layer exists; docs/store.md).
func TestEngineBehindTheStore(t *testing.T) {
	for pkg, ds := range imports(t) {
		if pkg == "internal/store" || pkg == "internal/eventlog" || strings.HasPrefix(pkg, "internal/eventlog/") {
			continue
		}
		for _, d := range ds {
			if d == "internal/eventlog" || strings.HasPrefix(d, "internal/eventlog/") {
				t.Errorf("%s imports %s: only internal/store may use the engine's mechanics", pkg, d)
			}
		}
	}
}
