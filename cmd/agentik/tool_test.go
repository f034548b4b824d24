package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// repoRoot is where package.json and node_modules are.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestTurnWithMCPTool runs the real binary with an mcp.json naming the
// npm reference server @modelcontextprotocol/server-everything over stdio;
// the fake model calls everything__echo, and the tool's answer reaches both
// the event stream and the model.
func TestTurnWithMCPTool(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	entry := filepath.Join(root, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("AGENTIK_TEST_NO_NODE") != "" {
			t.Skip("AGENTIK_TEST_NO_NODE is set")
		}
		t.Fatalf("server-everything is missing: run `npm ci` in %s (or set AGENTIK_TEST_NO_NODE=1): %v", root, err)
	}
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"]}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"),
		"OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+mcp, "OPENAI_API_KEY=sk-parent-secret")

	// Wait until the server is ready and its tools are registered.
	var tools struct{ Servers []agent.ToolServer }
	testwait.For(t, "the tool server to be ready", func() bool {
		getJSON(t, p.url("/agentik/tools"), &tools)
		return len(tools.Servers) == 1 && tools.Servers[0].State == agent.ToolServerReady
	})
	if !contains(tools.Servers[0].Tools, "everything__echo") {
		t.Fatalf("tools %v lack everything__echo", tools.Servers[0].Tools)
	}

	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "everything__echo", Arguments: `{"message":"ping from the model"}`}}})
	fake.Enqueue(llmtest.Reply{Text: "the tool answered"})
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"echo something"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var result *agent.Event
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventToolResult {
			result = &ev
		}
	}
	if result == nil || result.IsError || !strings.Contains(result.Result, "ping from the model") {
		t.Fatalf("tool_result %+v in\n%s", result, body)
	}
	reqs := fake.Requests()
	last := reqs[1] // the turn's second model call (a title request may follow it)
	var toolMsg string
	for _, m := range last.Messages {
		if m.Role == "tool" && m.ToolCallID == "call_1" {
			toolMsg = m.Content
		}
	}
	if !strings.Contains(toolMsg, "ping from the model") {
		t.Fatalf("the tool result did not reach the model: %+v", last.Messages)
	}
	offered := false
	for _, tl := range reqs[0].Tools {
		offered = offered || tl.Name == "everything__echo"
	}
	if !offered {
		t.Errorf("everything__echo was not offered to the model: %+v", reqs[0].Tools)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
