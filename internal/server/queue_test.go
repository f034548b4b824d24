package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/testwait"
)

func TestRESTQueuedSend(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	hold := make(chan struct{})
	ts.Fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	ts.Fake.Enqueue(llmtest.Reply{Text: "second"})
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}}); err != nil {
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
	testwait.For(t, "the queue to drain and the turn to end", func() bool {
		var now agent.Conversation
		ts.call(t, "GET", path, "", 200, &now)
		return !now.Running && now.Queued == 0
	})
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
	t.Parallel()
	ts := newTestServer(t)
	c := ts.create(t)
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}}); err != nil {
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

// withQueuePageBytes bounds a page of GET …/queue at n bytes.
func withQueuePageBytes(n int) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.QueuePageBytes = n }
}

// TestRESTQueuePages: a queue of 30 sends of 40 KiB comes in pages bounded
// in bytes (without paging parameters too), each with its total and the
// offset of the next; paging on lists every send once, at its position.
func TestRESTQueuePages(t *testing.T) {
	t.Parallel()
	const n, size, bound = 30, 40 << 10, 100 << 10
	ts := newTestServer(t, withQueuePageBytes(bound))
	c := ts.create(t)
	hold := make(chan struct{})
	defer close(hold)
	ts.Fake.Enqueue(llmtest.Reply{Text: "first", Hold: hold})
	ctx := context.Background()
	if _, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("one")}}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		res, err := ts.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text(fmt.Sprintf("q%02d %s", i, strings.Repeat("z", size)))}, OnBusy: agent.OnBusyQueue})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MessageID)
	}
	path := "/agentik/conversations/" + c.ID + "/queue"
	seen := 0
	for q, pages := "", 0; ; pages++ {
		resp := ts.do(t, "GET", path+q, "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var p protocol.QueueResult
		if err := json.Unmarshal(body, &p); resp.StatusCode != 200 || err != nil {
			t.Fatalf("queue%s: %d %s", q, resp.StatusCode, body)
		}
		if len(p.Queued) == 0 || len(body) > bound+bound/8 || p.Total != n {
			t.Fatalf("queue%s: %d sends in %d bytes, total %d", q, len(p.Queued), len(body), p.Total)
		}
		for _, it := range p.Queued {
			if it.MessageID != ids[seen] || it.Position != seen+1 {
				t.Fatalf("queue%s: %s at position %d, want %s at %d", q, it.MessageID, it.Position, ids[seen], seen+1)
			}
			seen++
		}
		if p.NextOffset == 0 {
			if pages < n*size/bound-1 {
				t.Fatalf("%d pages", pages+1)
			}
			break
		}
		if p.NextOffset != seen {
			t.Fatalf("next_offset %d after %d sends", p.NextOffset, seen)
		}
		q = fmt.Sprintf("?offset=%d", p.NextOffset)
	}
	if seen != n {
		t.Fatalf("%d sends listed, want %d", seen, n)
	}
	var lim protocol.QueueResult
	ts.call(t, "GET", path+"?limit=1&offset=29", "", 200, &lim)
	if len(lim.Queued) != 1 || lim.Queued[0].MessageID != ids[29] || lim.NextOffset != 0 {
		t.Fatalf("the last send: %+v", lim)
	}
	var bad agent.Error
	ts.call(t, "GET", path+"?limit=0", "", 400, &bad)
	if bad.Code != agent.CodeBadRequest || !strings.Contains(bad.Message, "limit") {
		t.Fatalf("limit=0: %+v", bad)
	}
}
