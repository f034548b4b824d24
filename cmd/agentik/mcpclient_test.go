package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestMCPClientInputRequired: the real binary's MCP client against a
// server on 2026-07-28 (mcp-go's, stateless) whose tool answers
// input_required instead of sending elicitation/create: the request is an
// elicitation item of the conversation's owner's inbox, answered there
// (POST /agentik/inbox/{id}), and the tool's retry gets the answer: its
// result is what the turn's model reads.
func TestMCPClientInputRequired(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("mrtr", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("deploy", mcp.WithString("target", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if ans := server.ElicitationResponse(req.Params.InputResponses, "confirm"); ans != nil {
				c, _ := ans.Content.(map[string]any)
				return mcp.NewToolResultText("deployed to " + req.GetString("target", "") + " by " + c["who"].(string)), nil
			}
			return server.NewInputRequestBuilder("asked").Elicit("confirm", mcp.ElicitationParams{
				Mode: mcp.ElicitationModeForm, Message: "Deploy to " + req.GetString("target", "") + "?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}, "required": []string{"who"}},
			}).ToolResult(), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(conf, []byte(`{"mcpServers":{"ops":{"url":"`+ts.URL+`/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fake, fakeURL := llmtest.NewHTTPServer(t)
	p := start(t, freeAddr(t), filepath.Join(dir, "agentik.db"), "OPENAI_BASE_URL="+fakeURL, "OPENAI_MODEL=fake", "AGENTIK_MCP_CONFIG="+conf, "AGENTIK_API_KEYS="+a2aKey)
	auth := map[string]string{"Authorization": "Bearer " + a2aKey}
	waitTools(t, p, auth)

	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_d", Name: "ops__deploy", Arguments: `{"target":"prod"}`}}})
	fake.Enqueue(llmtest.Reply{Text: "done"})
	var c struct{ ID string }
	must(t, a2aKey, "POST", p.url("/agentik/conversations"), `{}`, &c)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", p.url("/agentik/conversations/"+c.ID+"/send"), strings.NewReader(`{"content":[{"type":"text","body":"ship it"}]}`))
	req.Header.Set("Authorization", "Bearer "+a2aKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	var item agent.InboxItem
	testwait.For(t, "the server's input request in the inbox", func() bool {
		for _, it := range inboxItems(t, p, a2aKey, "pending") {
			if it.ConversationID == c.ID {
				item = it
				return true
			}
		}
		return false
	})
	if item.Kind != agent.InboxElicitation || item.Detail.Server != "ops" || item.Detail.Message != "Deploy to prod?" || !strings.Contains(string(item.Detail.Schema), `"who"`) {
		t.Fatalf("inbox item %+v", item)
	}
	must(t, a2aKey, "POST", p.url("/agentik/inbox/"+item.ID), `{"action":"accept","content":{"who":"ada"}}`, nil)
	var result agent.Message
	testwait.For(t, "the tool's result after the retry", func() bool {
		var hist struct{ Messages []agent.Message }
		requestJSON(t, "GET", p.url("/agentik/conversations/"+c.ID+"/messages"), "", auth, &hist)
		for _, m := range hist.Messages {
			if m.Type == agent.MessageToolResult && m.CallID == "call_d" {
				result = m
				return true
			}
		}
		return false
	})
	if result.IsError || result.Result != "deployed to prod by ada" {
		t.Errorf("the tool's result %+v", result)
	}
}
