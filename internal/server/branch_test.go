package server_test

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

// post does a request whose answer is a turn's SSE stream, and reads it.
func (ts *testServer) postTurn(t *testing.T, path string, body any) []frame {
	t.Helper()
	b, _ := json.Marshal(body)
	resp := ts.do(t, "POST", path, string(b))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	return readSSE(t, resp.Body, atEnd)
}

func texts(ms []agent.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, agent.MessageText(m))
	}
	return out
}

func TestBranchRESTAndWS(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{Text: "a1"})
	ts.send(t, c.ID, "q1")
	base := "/agentik/conversations/" + c.ID
	var page protocol.MessagesResult
	ts.call(t, "GET", base+"/messages", "", 200, &page)
	q1, a1 := page.Messages[0], page.Messages[1]

	ts.Fake.Enqueue(llmtest.Reply{Text: "a1b"})
	if got := names(ts.postTurn(t, base+"/regenerate", map[string]any{})); got != "start_response append_text message end" {
		t.Errorf("regenerate frames: %s", got)
	}
	ts.Fake.Enqueue(llmtest.Reply{Text: "b1"})
	ts.postTurn(t, base+"/edit", map[string]any{"message_id": q1.ID, "content": []agent.Content{agent.Text("p1")}})

	ts.call(t, "GET", base+"/messages", "", 200, &page)
	if got := texts(page.Messages); len(got) != 2 || got[0] != "p1" || got[1] != "b1" {
		t.Fatalf("active path %q", got)
	}
	if s := page.Messages[0].Siblings; s == nil || *s != (agent.Siblings{Index: 2, Count: 2}) {
		t.Errorf("p1 siblings %+v", s)
	}
	ts.call(t, "GET", base+"/messages?branch=all", "", 200, &page)
	if got := texts(page.Messages); len(got) != 5 {
		t.Fatalf("branch=all %q", got)
	}
	ts.call(t, "GET", base+"/messages?branch=some", "", 400, nil)

	var conv agent.Conversation
	ts.call(t, "POST", base+"/switch_branch", `{"message_id":"`+q1.ID+`"}`, 200, &conv)
	ts.call(t, "GET", base+"/messages", "", 200, &page)
	if got := texts(page.Messages); len(got) != 2 || got[1] != "a1b" || conv.Head != page.Messages[1].ID {
		t.Fatalf("after switch: %q, head %s", got, conv.Head)
	}
	if s := page.Messages[1].Siblings; s == nil || *s != (agent.Siblings{Index: 2, Count: 2}) {
		t.Errorf("a1b siblings %+v", s)
	}

	ts.call(t, "POST", base+"/edit", `{"message_id":"`+a1.ID+`","content":[{"type":"text","body":"x"}]}`, 400, nil)
	ts.call(t, "POST", base+"/regenerate", `{"message_id":"`+q1.ID+`"}`, 400, nil)
	ts.call(t, "POST", base+"/regenerate", `{"message_id":"nope"}`, 404, nil)
	ts.call(t, "POST", base+"/switch_branch", `{}`, 400, nil)
	ts.call(t, "POST", "/agentik/conversations/nope/switch_branch", `{"message_id":"x"}`, 404, nil)

	w := dialWS(t, ts)
	defer w.close()
	w.fail("switch_branch", map[string]any{"conversation_id": c.ID}, agent.CodeBadRequest)
	w.fail("edit", map[string]any{"conversation_id": c.ID, "message_id": q1.ID}, agent.CodeBadRequest)
	w.fail("regenerate", map[string]any{"conversation_id": c.ID, "message_id": "nope"}, agent.CodeNotFound)
	w.ok("switch_branch", map[string]any{"conversation_id": c.ID, "message_id": a1.ID}, &conv)
	var msgs protocol.MessagesResult
	w.ok("get_messages", map[string]any{"conversation_id": c.ID}, &msgs)
	if got := texts(msgs.Messages); len(got) != 2 || got[1] != "a1" {
		t.Errorf("get_messages after switch: %q", got)
	}
	w.ok("get_messages", map[string]any{"conversation_id": c.ID, "branch": "all"}, &msgs)
	if len(msgs.Messages) != 5 {
		t.Errorf("get_messages branch=all: %d", len(msgs.Messages))
	}
}
