package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestApprovalSurvivesKill9: the real binary with server-everything whose
// echo needs approval. The call waits; kill -9; after the restart it still
// waits; approve over REST → the tool runs and the answer arrives; a second
// decision is 409.
func TestApprovalSurvivesKill9(t *testing.T) {
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
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"],"requireApproval":{"always":["echo"]}}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr, db := freeAddr(t), filepath.Join(dir, "agentik.db")
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + mcp}
	p := start(t, addr, db, env...)
	waitTools(t, p, nil)
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "everything__echo", Arguments: `{"message":"before"}`}}})
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"echo something"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waiting := func(p *proc) agent.Conversation {
		var conv agent.Conversation
		testwait.For(t, "the conversation to wait for an approval", func() bool {
			getJSON(t, p.url("/agentik/conversations/"+c.ID), &conv)
			return len(conv.Waiting) == 1
		})
		return conv
	}
	waiting(p)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	p = start(t, addr, db, env...)
	if w := waiting(p); !w.Running || w.Waiting[0] != "call_1" {
		t.Fatalf("after the restart: %+v", w)
	}
	waitTools(t, p, nil)
	fake.Enqueue(llmtest.Reply{Text: "the tool answered"})
	postJSON(t, p.url("/agentik/conversations/"+c.ID+"/approve"), `{"call_id":"call_1","decision":"approve","arguments":{"message":"edited after the restart"}}`, nil)
	again, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/approve"), "application/json", strings.NewReader(`{"call_id":"call_1","decision":"deny"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(again.Body)
	again.Body.Close()
	if again.StatusCode != http.StatusConflict {
		t.Errorf("second decision: %d %s, want 409", again.StatusCode, b)
	}
	idle(t, p, c.ID)
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	var result, answer string
	for _, m := range hist.Messages {
		switch m.Type {
		case agent.MessageToolResult:
			result = m.Result
		case agent.MessageAssistant:
			if len(m.Content) > 0 {
				answer = m.Content[0].Body
			}
		}
	}
	if !strings.Contains(result, "edited after the restart") || result == "" {
		t.Errorf("tool result %q, want the echo of the edited arguments", result)
	}
	if answer != "the tool answered" {
		t.Errorf("answer %q; history %+v\nlogs:\n%s", answer, hist.Messages, p.logs)
	}
}

// TestChatAsksApproval: agentik chat asks y/n/e for a waiting call; e
// edits the arguments, and the tool runs with them.
func TestChatAsksApproval(t *testing.T) {
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
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	addr := freeAddr(t)
	p := start(t, addr, filepath.Join(dir, "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+mcp, "AGENTIK_TOOL_APPROVAL=always")
	waitTools(t, p, nil)
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_c", Name: "everything__echo", Arguments: `{"message":"as the model said"}`}}})
	fake.Enqueue(llmtest.Reply{Text: "echoed"})
	stdin, w := io.Pipe()
	defer w.Close()
	var out, errs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runChat(ctx, nil, chatEnv(addr), stdin, &out, &errs, nil) }()
	io.WriteString(w, "echo please\n")
	waitFor(t, &out, "y/n/e]")
	io.WriteString(w, "e\n")
	waitFor(t, &out, "arguments (a JSON object): ")
	io.WriteString(w, `{"message":"edited in the terminal"}`+"\n")
	waitFor(t, &out, "echoed")
	if !strings.Contains(out.String(), "edited in the terminal") {
		t.Errorf("the tool result with the edited arguments is not shown:\n%s", out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestApprovalOnOtherInstance: two instances on one PostgreSQL; the turn
// waits on the first; the decision reaches the second, which resumes the
// turn and runs the tool.
func TestApprovalOnOtherInstance(t *testing.T) {
	t.Parallel()
	a, b, fake := twoInstancesWithEverything(t, `"always"`)
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_pg", Name: "everything__echo", Arguments: `{"message":"from instance b"}`}}})
	fake.Enqueue(llmtest.Reply{Text: "resumed elsewhere"})
	var c agent.Conversation
	postJSON(t, a.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(a.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"echo"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	testwait.For(t, "the conversation to wait for an approval, seen on instance b", func() bool {
		var conv agent.Conversation
		getJSON(t, b.url("/agentik/conversations/"+c.ID), &conv)
		return len(conv.Waiting) == 1
	})
	postJSON(t, b.url("/agentik/conversations/"+c.ID+"/approve"), `{"call_id":"call_pg","decision":"approve"}`, nil)
	idle(t, a, c.ID)
	var hist struct{ Messages []agent.Message }
	getJSON(t, a.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	last := hist.Messages[len(hist.Messages)-1]
	if last.Type != agent.MessageAssistant || last.Content[0].Body != "resumed elsewhere" {
		t.Fatalf("last message %+v", last)
	}
}

// twoInstancesWithEverything starts two binaries on one fresh PostgreSQL
// schema, with the fake model and server-everything as their tool server
// under the approval rule requireApproval (mcp.json's JSON); both list its
// tools when it returns.
func twoInstancesWithEverything(t *testing.T, requireApproval string) (a, b *proc, fake *llmtest.Server) {
	t.Helper()
	entry := everythingEntry(t)
	mcp := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{"everything":{"command":"node","args":["`+entry+`","stdio"],"requireApproval":`+requireApproval+`}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b, fake = twoOnPostgres(t, "AGENTIK_MCP_CONFIG="+mcp)
	for _, p := range []*proc{a, b} {
		waitTools(t, p, nil)
	}
	return a, b, fake
}
