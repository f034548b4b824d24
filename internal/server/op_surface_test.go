package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// TestOpBothWays: ops that were one surface's only answer on both, the
// same bytes: list_queue (REST's queue listing) and get_agent.
func TestOpBothWays(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	ctx := context.Background()
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("two")}, ClientID: "k2", OnBusy: agent.OnBusyQueue}); err != nil {
		t.Fatal(err)
	}
	ws := dialWS(t, ts)
	defer ws.close()
	var got protocol.QueueResult
	ws.ok("list_queue", map[string]any{"conversation_id": c.ID}, &got)
	if len(got.Queued) != 1 || got.Queued[0].Position != 1 || got.Queued[0].ClientID != "k2" {
		t.Fatalf("list_queue: %+v", got)
	}
	resp := ts.do(t, "GET", "/agentik/conversations/"+c.ID+"/queue", "")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, _ := json.Marshal(got)
	if strings.TrimSpace(string(b)) != string(want) {
		t.Errorf("REST queue %s, WS %s", b, want)
	}
	ws.fail("list_queue", map[string]any{}, agent.CodeBadRequest)
	ws.fail("list_queue", map[string]any{"conversation_id": "nope"}, agent.CodeNotFound)

	var d agent.AgentDef
	ws.ok("create_agent", map[string]any{"slug": "helper", "name": "Helper"}, &d)
	var got2 agent.AgentDef
	ws.ok("get_agent", map[string]any{"slug": "helper"}, &got2)
	if got2.Slug != "helper" || got2.Name != "Helper" {
		t.Fatalf("get_agent: %+v", got2)
	}
	ws.fail("get_agent", map[string]any{"slug": "nobody"}, agent.CodeNotFound)
	// Frames are read as strictly as bodies: a misspelt field is refused.
	ws.fail("create_agent", map[string]any{"slug": "other", "nmae": "Other"}, agent.CodeBadRequest)
	ws.fail("update_agent", map[string]any{"slug": "helper", "instruction": "x"}, agent.CodeBadRequest)
}

// TestOpPathAndBody: a path value the body names too must agree; the
// body cannot redirect an op to another conversation or agent.
func TestOpPathAndBody(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	a, b := ts.create(t), ts.create(t)
	resp := ts.do(t, "POST", "/agentik/conversations/"+a.ID+"/rename", `{"conversation_id":"`+b.ID+`","title":"x"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("rename with another conversation_id in the body: %d, want 400", resp.StatusCode)
	}
	got, err := ts.Runner.Conversation(context.Background(), b.ID)
	if err != nil || got.Title == "x" {
		t.Fatalf("the body's conversation was renamed: %+v %v", got, err)
	}
	resp = ts.do(t, "POST", "/agentik/conversations/"+a.ID+"/rename", `{"conversation_id":"`+a.ID+`","title":"y"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rename naming its own conversation in the body: %d, want 200", resp.StatusCode)
	}
}

// TestWSMessagesAfterInstant: get_messages' after may be an RFC 3339
// time on the WebSocket as over REST, and a number may come as text.
func TestWSMessagesAfterInstant(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ws := dialWS(t, ts)
	defer ws.close()
	before := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	ts.Fake.Enqueue(llmtest.Reply{Text: "hi"})
	// The REST send's stream ends with the turn.
	resp := ts.do(t, "POST", "/agentik/conversations/"+c.ID+"/send", `{"content":[{"type":"text","body":"hello"}]}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var all, since protocol.MessagesResult
	ws.ok("get_messages", map[string]any{"conversation_id": c.ID}, &all)
	ws.ok("get_messages", map[string]any{"conversation_id": c.ID, "after": before, "limit": "50"}, &since)
	if len(all.Messages) != 2 || len(since.Messages) != len(all.Messages) {
		t.Fatalf("all %d messages, after an hour ago %d", len(all.Messages), len(since.Messages))
	}
	ws.fail("get_messages", map[string]any{"conversation_id": c.ID, "after": "yesterday"}, agent.CodeBadRequest)
	ws.fail("get_messages", map[string]any{"conversation_id": c.ID, "limit": 1.5}, agent.CodeBadRequest)
}
