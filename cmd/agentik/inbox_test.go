package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// inboxItems is ann's (key's) inbox in state.
func inboxItems(t *testing.T, p *proc, key, state string) []agent.InboxItem {
	t.Helper()
	var res struct{ Items []agent.InboxItem }
	must(t, key, "GET", p.url("/agentik/inbox?state="+state), "", &res)
	return res.Items
}

// inboxStream follows key's inbox on p from its start; it is closed when
// the test ends.
func inboxStream(t *testing.T, ctx context.Context, p *proc, key string) *client.Sub {
	t.Helper()
	cl, err := client.Dial(ctx, client.Config{URL: p.url(""), APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	sub, err := cl.Subscribe(ctx, client.Stream{Kind: client.StreamInbox}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return sub
}

// TestInboxScheduleAndA2A: on the real binary, a scheduled run and a turn
// started over A2A each wait for an approval; both are items of their
// member's inbox (its list and its WebSocket stream) and of no one
// else's; answered through POST /agentik/inbox/{id}, both turns finish.
// The A2A one is answered at once from the inbox and through the
// conversation's own approve: exactly one decision is recorded, the other
// is a conflict naming who answered.
func TestInboxScheduleAndA2A(t *testing.T) {
	t.Parallel()
	entry := filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s is missing: run `npm ci`: %v", entry, err)
	}
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	conf := `{"mcpServers":{"everything":{"command":"node","args":["` + entry + `","stdio"],"requireApproval":{"always":["echo"]}}}}`
	if err := os.WriteFile(mcp, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTeam(t, filepath.Join(dir, "agentik.db"), "AGENTIK_MCP_CONFIG="+mcp)
	p, ann, bob := tm.p, tm.ann.key, tm.bob.key
	waitTools(t, p, map[string]string{"Authorization": "Bearer " + ann})

	// ann follows her inbox stream from the start.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	sub := inboxStream(t, ctx, p, ann)

	// A schedule of ann's and an A2A send of ann's, each calling the tool
	// that waits for approval.
	var sc agent.Schedule
	// Its one slot comes in two seconds (at most one a minute is allowed).
	rule := fmt.Sprintf("FREQ=MINUTELY;BYSECOND=%d;COUNT=1", (time.Now().Second()+2)%60)
	must(t, ann, "POST", p.url("/agentik/schedules"), `{"prompt":"[[tool=everything__echo args={\"message\":\"nightly\"}]]","rrule":"`+rule+`"}`, &sc)
	rpc := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"[[tool=everything__echo args={\"message\":\"from a2a\"}]]"}]}}}`
	var sent struct {
		Result struct {
			Task struct {
				ID, ContextID string
				Status        struct{ State string }
			}
		}
	}
	must(t, ann, "POST", p.url("/a2a/agentik"), rpc, &sent)
	if sent.Result.Task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("A2A send: %+v, want a task waiting for input", sent)
	}
	a2aConv := sent.Result.Task.ContextID

	// Both requests reach ann's inbox stream, then her list.
	asked := map[string]string{} // conversation → call id
	for len(asked) < 2 {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("inbox stream: %v (asked %v); logs:\n%s", err, asked, p.logs)
		}
		if e := ev.Event; e != nil {
			if e.Type != agent.EventApprovalRequest {
				t.Fatalf("inbox stream: %s before both requests", e.Type)
			}
			asked[ev.ConversationID] = e.CallID
		} else if ev.Agent == nil || ev.Agent.Type != agent.AgentWaiting {
			t.Fatalf("inbox stream carries %s", ev.JSON)
		}
	}
	items := inboxItems(t, p, ann, "pending")
	if len(items) != 2 {
		t.Fatalf("ann's inbox %+v, want the scheduled run's and the A2A turn's", items)
	}
	var schedItem, a2aItem agent.InboxItem
	for _, it := range items {
		if asked[it.ConversationID] != it.CallID || it.Kind != agent.InboxApproval || it.Title != "everything__echo" ||
			it.ID != agent.InboxID(agent.InboxApproval, it.ConversationID, it.CallID) {
			t.Fatalf("item %+v does not match the stream's %v", it, asked)
		}
		if it.ConversationID == a2aConv {
			a2aItem = it
		} else {
			schedItem = it
		}
	}
	if a2aItem.ID == "" || !strings.Contains(schedItem.Detail.Arguments, "nightly") {
		t.Fatalf("items %+v, want one of the A2A context %s and the schedule's", items, a2aConv)
	}

	// bob sees none of it and cannot answer it.
	if got := inboxItems(t, p, bob, "pending"); len(got) != 0 {
		t.Fatalf("bob's inbox %+v", got)
	}
	code, b := call(t, bob, "POST", p.url("/agentik/inbox/"+url.PathEscape(schedItem.ID)), `{"decision":"approve"}`)
	if code != http.StatusNotFound || !strings.Contains(string(b), `"not_found"`) {
		t.Fatalf("bob answers ann's item: %d %s", code, b)
	}
	// Bad input: a typed error, nothing changed.
	code, b = call(t, ann, "POST", p.url("/agentik/inbox/"+url.PathEscape(schedItem.ID)), `{"action":"accept"}`)
	if code != http.StatusBadRequest || !strings.Contains(string(b), "decision") {
		t.Fatalf("an elicitation's answer to an approval: %d %s", code, b)
	}
	if got := inboxItems(t, p, ann, "pending"); len(got) != 2 {
		t.Fatalf("bad input changed the inbox: %+v", got)
	}

	// The A2A item, answered at once from the inbox and the conversation.
	var wg sync.WaitGroup
	codes, bodies := make([]int, 2), make([][]byte, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		codes[0], bodies[0] = call(t, ann, "POST", p.url("/agentik/inbox/"+url.PathEscape(a2aItem.ID)), `{"decision":"approve"}`)
	}()
	go func() {
		defer wg.Done()
		codes[1], bodies[1] = call(t, ann, "POST", p.url("/agentik/conversations/"+a2aConv+"/approve"), `{"call_id":"`+a2aItem.CallID+`","decision":"deny","reason":"no"}`)
	}()
	wg.Wait()
	won := -1
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			if won >= 0 {
				t.Fatalf("both answers won: %d %s / %d %s", codes[0], bodies[0], codes[1], bodies[1])
			}
			won = i
		case http.StatusConflict:
			var e agent.Error
			_ = json.Unmarshal(bodies[i], &e)
			if e.Code != agent.CodeConflict || !strings.Contains(e.Message, "by "+tm.ann.id+" at ") {
				t.Fatalf("the losing answer: %s, want conflict naming ann and when", bodies[i])
			}
		default:
			t.Fatalf("answer %d: %d %s", i, c, bodies[i])
		}
	}
	if won < 0 {
		t.Fatalf("no answer won: %s / %s", bodies[0], bodies[1])
	}

	// The scheduled run's item, from the terminal client.
	var out, errb strings.Builder
	getenv := func(k string) string {
		return map[string]string{"AGENTIK_URL": p.url(""), "AGENTIK_API_KEY": ann}[k]
	}
	if err := runInbox(ctx, nil, getenv, &out, &errb); err != nil || !strings.Contains(out.String(), schedItem.ID) || strings.Contains(out.String(), a2aItem.ID) {
		t.Fatalf("agentik inbox: %v\n%s%s", err, out.String(), errb.String())
	}
	out.Reset()
	if err := runInbox(ctx, []string{"approve", schedItem.ID}, getenv, &out, &errb); err != nil {
		t.Fatalf("agentik inbox approve: %v %s", err, errb.String())
	}

	// Both turns finish; the items are resolved, by ann, once each.
	for _, id := range []string{schedItem.ConversationID, a2aConv} {
		testwait.For(t, "the turn of "+id+" to end", func() bool {
			var c agent.Conversation
			must(t, ann, "GET", p.url("/agentik/conversations/"+id), "", &c)
			return !c.Running
		})
	}
	if got := inboxItems(t, p, ann, "pending"); len(got) != 0 {
		t.Fatalf("still pending: %+v", got)
	}
	res := inboxItems(t, p, ann, "resolved")
	if len(res) != 2 {
		t.Fatalf("resolved %+v", res)
	}
	for _, it := range res {
		want := agent.DecisionApprove
		if it.ID == a2aItem.ID && won == 1 {
			want = agent.DecisionDeny
		}
		if it.State != agent.InboxResolved || it.ResolvedBy != tm.ann.id || it.ResolvedAt == nil || it.Detail.Decision != want {
			t.Fatalf("resolved item %+v, want %s by %s", it, want, tm.ann.id)
		}
	}
	var task struct {
		Result struct{ Status struct{ State string } }
	}
	must(t, ann, "POST", p.url("/a2a/agentik"), `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+sent.Result.Task.ID+`"}}`, &task)
	if task.Result.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("A2A task after the answer: %+v", task)
	}
	// The stream resolved both too (the answers' events follow).
	resolved := map[string]bool{}
	for len(resolved) < 2 {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("inbox stream: %v", err)
		}
		if e := ev.Event; e != nil && e.Type == agent.EventApproval {
			resolved[ev.ConversationID] = true
		}
	}
}

// TestInboxOnTwoInstances: two binaries on one PostgreSQL. A turn waits
// for an approval on A; the item is on B's inbox list and stream too.
// Answered from B's inbox, A's list and stream show it resolved at once
// (the turn on A finishes), and a second answer on A is a conflict naming
// who answered and when, changing nothing.
func TestInboxOnTwoInstances(t *testing.T) {
	t.Parallel()
	a, b, fake := twoInstancesWithEverything(t, `{"always":["echo"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	streams := map[*proc]*client.Sub{a: inboxStream(t, ctx, a, ""), b: inboxStream(t, ctx, b, "")}
	// next is the next event of type typ on p's inbox stream (agent
	// states between are skipped).
	next := func(p *proc, typ string) *agent.Event {
		t.Helper()
		for {
			ev, err := streams[p].Next(ctx)
			if err != nil {
				t.Fatalf("inbox stream of %s: %v, waiting for %s", p.addr, err, typ)
			}
			if e := ev.Event; e != nil {
				if e.Type != typ {
					t.Fatalf("inbox stream of %s: %s, want %s", p.addr, e.Type, typ)
				}
				return e
			}
		}
	}

	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "call_two", Name: "everything__echo", Arguments: `{"message":"two instances"}`}}})
	fake.Enqueue(llmtest.Reply{Text: "answered on b, finished on a"})
	var c agent.Conversation
	postJSON(t, a.url("/agentik/conversations"), `{}`, &c)
	resp, err := http.Post(a.url("/agentik/conversations/"+c.ID+"/send"), "application/json", strings.NewReader(`{"content":[{"type":"text","body":"echo"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, p := range []*proc{a, b} {
		if e := next(p, agent.EventApprovalRequest); e.CallID != "call_two" {
			t.Fatalf("inbox stream of %s asks for %q", p.addr, e.CallID)
		}
	}
	items := inboxItems(t, b, "", "pending")
	if len(items) != 1 || items[0].ConversationID != c.ID || items[0].CallID != "call_two" {
		t.Fatalf("b's pending inbox %+v", items)
	}
	id := items[0].ID

	must(t, "", "POST", b.url("/agentik/inbox/"+url.PathEscape(id)), `{"decision":"approve"}`, nil)
	for _, p := range []*proc{a, b} {
		if e := next(p, agent.EventApproval); e.CallID != "call_two" {
			t.Fatalf("inbox stream of %s resolves %q", p.addr, e.CallID)
		}
	}
	if got := inboxItems(t, a, "", "pending"); len(got) != 0 {
		t.Fatalf("a's inbox still has %+v pending after b's answer", got)
	}
	res := inboxItems(t, a, "", "resolved")
	if len(res) != 1 || res[0].ID != id || res[0].State != agent.InboxResolved || res[0].ResolvedAt == nil || res[0].Detail.Decision != agent.DecisionApprove {
		t.Fatalf("a's resolved inbox %+v", res)
	}
	code, body := call(t, "", "POST", a.url("/agentik/inbox/"+url.PathEscape(id)), `{"decision":"deny"}`)
	var e agent.Error
	_ = json.Unmarshal(body, &e)
	if code != http.StatusConflict || e.Code != agent.CodeConflict || !strings.Contains(e.Message, "by "+res[0].ResolvedBy+" at ") {
		t.Fatalf("a second answer on a: %d %s, want a conflict naming %q and when", code, body, res[0].ResolvedBy)
	}
	idle(t, a, c.ID)
	var hist struct{ Messages []agent.Message }
	getJSON(t, a.url("/agentik/conversations/"+c.ID+"/messages"), &hist)
	last := hist.Messages[len(hist.Messages)-1]
	if last.Type != agent.MessageAssistant || last.Content[0].Body != "answered on b, finished on a" {
		t.Fatalf("last message %+v", last)
	}
	if res := inboxItems(t, b, "", "resolved"); len(res) != 1 || res[0].Detail.Decision != agent.DecisionApprove {
		t.Fatalf("b's resolved inbox after the conflict %+v", res)
	}
}
