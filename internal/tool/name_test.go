package tool

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentik/agentik/internal/agent"
	"github.com/mark3labs/mcp-go/mcp"
)

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestBaseName(t *testing.T) {
	long := strings.Repeat("t", 80)
	tests := []struct{ server, tool, want string }{
		{"fs", "read_file", "fs__read_file"},
		{"everything", "get-env", "everything__get-env"},
		{"github.com", "search repos", "github_com__search_repos"},
		{"ünï", "tool/x", "_n___tool_x"},
		{"s", long, ("s__" + long)[:55] + "_" + shortHash("s__"+long)},
	}
	for _, tt := range tests {
		got := baseName(tt.server, tt.tool)
		if got != tt.want {
			t.Errorf("baseName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
		if !validName.MatchString(got) {
			t.Errorf("baseName(%q, %q) = %q: not a valid tool name", tt.server, tt.tool, got)
		}
	}
	// Long names that differ only at the end stay apart.
	if baseName("s", long+"a") == baseName("s", long+"b") {
		t.Errorf("long names collide")
	}
}

func TestUniqueNames(t *testing.T) {
	// Each pair maps to the same sanitized name.
	pairs := [][2][2]string{
		{{"a", "b__c"}, {"a__b", "c"}},
		{{"my.server", "x"}, {"my_server", "x"}},
		{{"s", strings.Repeat("x", 70)}, {"s", strings.Repeat("x", 70)}},
	}
	for _, p := range pairs {
		taken := map[string]bool{}
		first := uniqueName(p[0][0], p[0][1], taken)
		taken[first] = true
		second := uniqueName(p[1][0], p[1][1], taken)
		taken[second] = true
		third := uniqueName(p[1][0], p[1][1], taken)
		if first == second || second == third || first == third {
			t.Errorf("%v: names %q, %q, %q are not unique", p, first, second, third)
		}
		for _, n := range []string{first, second, third} {
			if !validName.MatchString(n) {
				t.Errorf("%q is not a valid tool name", n)
			}
		}
		if first != baseName(p[0][0], p[0][1]) {
			t.Errorf("the first comer lost its plain name: %q", first)
		}
	}
}

func TestRebuildOrder(t *testing.T) {
	// Two servers whose tools clash: the earlier server keeps the plain name.
	m := &Manager{}
	a := &supervisor{m: m, cfg: ServerConfig{Name: "a"}, tools: []mcp.Tool{{Name: "b__c"}}}
	b := &supervisor{m: m, cfg: ServerConfig{Name: "a__b"}, tools: []mcp.Tool{{Name: "c", Description: "d"}}}
	m.servers = []*supervisor{a, b}
	m.rebuild()
	specs := m.Specs(t.Context())
	if len(specs) != 2 || specs[0].Name != "a__b__c" || specs[1].Name == "a__b__c" || specs[1].Description != "d" {
		t.Fatalf("specs = %+v", specs)
	}
	if ref := m.names[specs[1].Name]; ref.srv != b || ref.tool != "c" {
		t.Errorf("%s routes to %+v", specs[1].Name, ref)
	}
	var params struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(specs[0].Parameters, &params); err != nil || params.Type != "object" || params.Properties == nil {
		t.Errorf("parameters = %s, want an object schema", specs[0].Parameters)
	}
}

func TestCapText(t *testing.T) {
	for _, max := range []int{0, 10, 60, 61, 100, 1000} {
		s := strings.Repeat("日本", 100) // 3-byte runes
		got := capText(s, max)
		if max == 0 || max >= len(s) {
			if got != s {
				t.Errorf("capText(%d) changed the text", max)
			}
			continue
		}
		if !utf8.ValidString(got) || !strings.Contains(got, "[truncated:") {
			t.Errorf("capText(%d) = %q", max, got)
		}
		if max >= 60 && len(got) > max {
			t.Errorf("capText(%d) is %d bytes", max, len(got))
		}
	}
}

func TestResultText(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("first"),
		mcp.NewImageContent("aGVsbG8=", "image/png"),
		mcp.NewResourceLink("file:///x", "x", "", ""),
		mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///y", Text: "inline"}),
	}}
	want := "first\n[image image/png, 8 bytes of base64]\n[resource link \"x\": file:///x]\n[resource file:///y]\ninline"
	if got := resultText(res); got != want {
		t.Errorf("resultText = %q, want %q", got, want)
	}
	// The links and embedded resources are the card's resources, each a
	// reference to the server's resource; a URI too long is left out.
	res.Content = append(res.Content, mcp.NewResourceLink("x://"+strings.Repeat("a", maxResourceURI), "long", "", ""))
	got := resultResources(res, "srv")
	wantRes := []agent.Content{
		{Type: agent.ContentResource, Server: "srv", URI: "file:///x", Name: "x"},
		{Type: agent.ContentResource, Server: "srv", URI: "file:///y"},
	}
	if !reflect.DeepEqual(got, wantRes) {
		t.Errorf("resultResources = %+v, want %+v", got, wantRes)
	}
	structured := &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}
	if got := resultText(structured); got != `{"n":1}` {
		t.Errorf("structured = %q", got)
	}
}

// TestReadyWithItsTools: a server's first listing changes its state and
// the names the model sees at once. set used to mark the server ready,
// let go of it, then rebuild the names: a reader in between (Servers,
// Specs; a client polling the servers' list for "ready") saw a ready
// server with no tools. Here a reader holds the names' lock while the
// listing arrives; the server must not read ready until its tools do.
func TestReadyWithItsTools(t *testing.T) {
	m := &Manager{}
	s := &supervisor{m: m, cfg: ServerConfig{Name: "s"}, log: slog.New(slog.DiscardHandler), state: agent.ToolServerStarting}
	m.servers = []*supervisor{s}
	m.mu.RLock() // a reader of the names, mid-way
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.set(agent.ToolServerReady, nil, nil, []mcp.Tool{{Name: "echo"}})
	}()
	// set goes as far as it can: to the names' lock the reader holds.
	for !blockedIn("(*supervisor).set", "(*RWMutex).Lock") {
		runtime.Gosched()
	}
	if ts := s.snapshot(); ts.State == agent.ToolServerReady && len(ts.Tools) == 0 {
		t.Fatalf("while the names were being read the server was %+v: ready with no tools", ts)
	}
	m.mu.RUnlock()
	<-done
	got := m.Servers()
	if len(got) != 1 || got[0].State != agent.ToolServerReady || !reflect.DeepEqual(got[0].Tools, []string{"s__echo"}) {
		t.Fatalf("after the listing: %+v, want ready with s__echo", got)
	}
	if specs := m.Specs(t.Context()); len(specs) != 1 || specs[0].Name != "s__echo" {
		t.Fatalf("specs = %+v", specs)
	}
}

// blockedIn reports whether some goroutine's stack holds all of funcs.
func blockedIn(funcs ...string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
next:
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for _, f := range funcs {
			if !strings.Contains(g, f) {
				continue next
			}
		}
		return true
	}
	return false
}

// TestSameToolsSeesMeta: a listing that changes only a tool's app or who
// may call it is a change (the server's list_changed is followed by a
// rebuild): before, the names kept the last listing's app and visibility.
func TestSameToolsSeesMeta(t *testing.T) {
	meta := func(ui map[string]any) *mcp.Meta { return &mcp.Meta{AdditionalFields: map[string]any{"ui": ui}} }
	base := mcp.Tool{Name: "add", Description: "d"}
	for name, changed := range map[string]mcp.Tool{
		"visibility": {Name: "add", Description: "d", Meta: meta(map[string]any{"visibility": []any{"app"}})},
		"app":        {Name: "add", Description: "d", Meta: meta(map[string]any{"resourceUri": "ui://counter/app.html"})},
	} {
		if sameTools([]mcp.Tool{base}, []mcp.Tool{changed}) {
			t.Errorf("a listing whose %s changed is the same", name)
		}
	}
	same := mcp.Tool{Name: "add", Description: "d", Meta: meta(map[string]any{"prefersBorder": true})}
	if !sameTools([]mcp.Tool{base}, []mcp.Tool{same}) {
		t.Errorf("a listing with _meta rebuild does not read is a change")
	}
}
