package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// TestAppVisibility: an MCP App server's tools restrict who calls them
// (_meta.ui.visibility, MCP Apps): add is the app's alone, reset the
// model's alone (testdata/mcpapp-server.mjs, the MCP Apps SDK's
// registerAppTool). The model is not offered add, and its call of add
// anyway is an unknown tool that changes nothing; the tools list says who
// may call what; an app's call of reset is refused before anything runs.
// (The app's own call of add, through the SDK in Chromium, is
// TestBrowserMCPApp's.)
func TestAppVisibility(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withCounterApp(t))
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "m1", Name: "counter__add", Arguments: `{"n":5}`}}})
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "m2", Name: "counter__show_counter", Arguments: `{}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "done"})
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("add five")}}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ts, c.ID)

	var offered []string
	for _, tool := range ts.Fake.Requests()[0].Tools {
		offered = append(offered, tool.Name)
	}
	if slices.Contains(offered, "counter__add") || !slices.Contains(offered, "counter__reset") || !slices.Contains(offered, "counter__show_counter") {
		t.Errorf("the model was offered %v: want reset and show_counter, not the app's add", offered)
	}
	var page struct{ Events []agent.AllEvent }
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/events/replay?limit=1000", "", 200, &page)
	results := map[string]agent.Event{}
	for _, ev := range page.Events {
		if e := ev.Event; e != nil && e.Type == agent.EventToolResult {
			results[e.CallID] = *e
		}
	}
	if r := results["m1"]; !r.IsError || !strings.Contains(r.Result, `unknown tool "counter__add"`) {
		t.Errorf("the model's call of the app's tool: %+v, want an unknown tool", r)
	}
	if r := results["m2"]; r.IsError || r.Result != "count is 0" {
		t.Errorf("show_counter after the refused add: %+v, want count is 0", r)
	}

	var tools struct{ Servers []agent.ToolServer }
	ts.call(t, "GET", "/agentik/tools", "", 200, &tools)
	var vis map[string][]string
	for _, s := range tools.Servers {
		if s.Name == "counter" {
			vis = s.Visibility
		}
	}
	if !slices.Equal(vis["counter__add"], []string{"app"}) || !slices.Equal(vis["counter__reset"], []string{"model"}) || len(vis) != 2 {
		t.Errorf("visibility in the tools list: %v", vis)
	}

	var e agent.Error
	n := len(page.Events)
	ts.call(t, "POST", "/agentik/conversations/"+c.ID+"/app-calls", `{"app":"counter__show_counter","name":"counter__reset"}`, 403, &e)
	if e.Code != agent.CodeForbidden || !strings.Contains(e.Message, "for the model only") {
		t.Errorf("an app's call of the model's tool: %+v", e)
	}
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/events/replay?limit=1000", "", 200, &page)
	if len(page.Events) != n {
		t.Errorf("the refused app call wrote %d events", len(page.Events)-n)
	}
}
