package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
)

func TestRESTQueuedSend(t *testing.T) {
	ts := newTestServer(t)
	c := ts.create(t)
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	ts.Fake.Enqueue(llmtest.Reply{Text: "second"})
	if _, err := ts.Runner.Send(context.Background(), c.ID, []agent.Content{agent.Text("one")}, ""); err != nil {
		t.Fatal(err)
	}
	send := `{"content":[{"type":"text","body":"two"}],"on_busy":"queue"}`
	path := "/agentik/conversations/" + c.ID
	var bad agent.Error
	ts.call(t, "POST", path+"/send", `{"content":[{"type":"text","body":"x"}],"on_busy":"whenever"}`, 400, &bad)
	if bad.Code != agent.CodeBadRequest || !strings.Contains(bad.Message, "on_busy") {
		t.Errorf("unknown on_busy: %+v", bad)
	}
	ts.call(t, "POST", path+"/send", `{"content":[{"type":"text","body":"x"}]}`, 409, &bad)
	if bad.Code != agent.CodeBusy {
		t.Errorf("send without on_busy during a turn: %+v, want busy", bad)
	}
	var q1, q2 protocol.SendResult
	ts.call(t, "POST", path+"/send", send, 202, &q1)
	ts.call(t, "POST", path+"/send", strings.Replace(send, "two", "three", 1), 202, &q2)
	if !q1.Queued || q1.Position != 1 || !q2.Queued || q2.Position != 2 {
		t.Fatalf("queued sends: %+v %+v", q1, q2)
	}
	var list struct{ Queued []protocol.QueuedItem }
	ts.call(t, "GET", path+"/queue", "", 200, &list)
	if len(list.Queued) != 2 || list.Queued[0].MessageID != q1.MessageID || list.Queued[1].Position != 2 || list.Queued[1].Content[0].Body != "three" {
		t.Fatalf("queue %+v", list)
	}
	var conv agent.Conversation
	ts.call(t, "GET", path, "", 200, &conv)
	if conv.Queued != 2 {
		t.Fatalf("conversation %+v, want queued 2", conv)
	}
	ts.call(t, "DELETE", path+"/queue/"+q2.MessageID, "", 204, nil)
	ts.call(t, "DELETE", path+"/queue/"+q2.MessageID, "", 404, &bad)
	close(hold)
	for conv.Running || conv.Queued > 0 {
		time.Sleep(10 * time.Millisecond)
		ts.call(t, "GET", path, "", 200, &conv)
	}
	ts.call(t, "DELETE", path+"/queue/"+q1.MessageID, "", 409, &bad)
	if bad.Code != agent.CodeConflict {
		t.Errorf("cancel of a started send: %+v, want conflict", bad)
	}
	var hist struct{ Messages []agent.Message }
	ts.call(t, "GET", path+"/messages", "", 200, &hist)
	var got []string
	for _, m := range hist.Messages {
		got = append(got, m.Content[0].Body)
	}
	if s := strings.Join(got, " "); s != "one first two second" {
		t.Fatalf("history %q", s)
	}
	if hist.Messages[2].ID != q1.MessageID {
		t.Errorf("started message id %s, want the queued %s", hist.Messages[2].ID, q1.MessageID)
	}
}

func TestWSQueuedSend(t *testing.T) {
	ts := newTestServer(t)
	c := ts.create(t)
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	if _, err := ts.Runner.Send(context.Background(), c.ID, []agent.Content{agent.Text("one")}, ""); err != nil {
		t.Fatal(err)
	}
	ws := dialWS(t, ts)
	var res protocol.SendResult
	ws.ok("send", map[string]any{"conversation_id": c.ID, "content": []agent.Content{agent.Text("two")}, "on_busy": "queue"}, &res)
	if !res.Queued || res.Position != 1 || res.MessageID == "" {
		t.Fatalf("queued send: %+v", res)
	}
	ws.fail("send", map[string]any{"conversation_id": c.ID, "content": []agent.Content{agent.Text("x")}, "on_busy": "soon"}, agent.CodeBadRequest)
	ws.fail("cancel_queued", map[string]any{"conversation_id": c.ID}, agent.CodeBadRequest)
	ws.ok("cancel_queued", map[string]any{"conversation_id": c.ID, "message_id": res.MessageID}, nil)
	ws.fail("cancel_queued", map[string]any{"conversation_id": c.ID, "message_id": res.MessageID}, agent.CodeNotFound)
}
