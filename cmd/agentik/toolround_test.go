package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// slowTools serves an MCP tool "wait" over streamable HTTP that reports
// each call on called and answers only once its client goes away.
func slowTools(t *testing.T) (url string, called chan string) {
	t.Helper()
	called = make(chan string, 16)
	s := server.NewMCPServer("slow", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("wait", mcp.WithString("name")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			called <- req.GetString("name", "")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", called
}

// TestKill9MidToolRound kills the real binary while the first of two
// parallel tool calls runs. After the restart neither call is run again:
// both are answered (is_error, "interrupted by a restart") in history, the
// continued turn's model call reads them, and the histories sent are ones
// a strict model (OpenAI's pairing rule) accepts.
func TestKill9MidToolRound(t *testing.T) {
	t.Parallel()
	mcpURL, called := slowTools(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(conf, []byte(`{"mcpServers":{"slow":{"url":"`+mcpURL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t, llmtest.WithStrictToolPairs())
	db := filepath.Join(dir, "agentik.db")
	addr := freeAddr(t)
	env := []string{"OPENAI_BASE_URL=" + fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG=" + conf}
	p := start(t, addr, db, env...)
	waitTools(t, p, nil)

	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{
		{ID: "call_a", Name: "slow__wait", Arguments: `{"name":"a"}`},
		{ID: "call_b", Name: "slow__wait", Arguments: `{"name":"b"}`},
	}})
	var c agent.Conversation
	postJSON(t, p.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"run both"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := <-called; got != "a" {
		t.Fatalf("first tool call %q", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	fake.Enqueue(llmtest.Reply{Text: "decided without them"})
	p = start(t, addr, db, env...)
	testwait.For(t, "the continued turn to end", func() bool {
		var conv agent.Conversation
		getJSON(t, p.url("/agentik/conversations/"+c.ID), &conv)
		return !conv.Running
	})
	select {
	case got := <-called:
		t.Fatalf("the tool call %q running at the kill was run again after the restart", got)
	default:
	}
	reqs := fake.Requests()
	answered := 0
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" && strings.Contains(m.Content, "interrupted by a restart") {
			answered++
		}
	}
	if answered != 2 {
		t.Errorf("the continuation told the model of %d interrupted calls, want 2: %+v", answered, reqs[len(reqs)-1].Messages)
	}
	var hist struct{ Messages []agent.Message }
	getJSON(t, p.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	results := map[string]agent.Message{}
	for _, m := range hist.Messages {
		if m.Type == agent.MessageToolResult {
			results[m.CallID] = m
		}
	}
	for _, id := range []string{"call_a", "call_b"} {
		if m, ok := results[id]; !ok || !m.IsError || !strings.Contains(m.Result, "restart") {
			t.Errorf("after the restart, the result of %s is %+v; want an is_error result naming the restart", id, m)
		}
	}

	fake.Enqueue(llmtest.Reply{Text: "back"})
	resp2, err := http.Post(p.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"again"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if !strings.Contains(string(body), `"text":"back"`) {
		t.Fatalf("the turn after the restart (a strict model): %s", body)
	}
}
