package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// withApproval: every call of weather__forecast waits for a decision.
func withApproval() rigOption {
	return func(a *agent.Config, s *server.Config) {
		a.Tools, a.ContentTools, s.Tools, s.ToolsFor = fakeTools{}, nil, fakeTools{}, nil
		a.Approval = func(name string) bool { return name == "weather__forecast" }
	}
}

func waitWaitingREST(t *testing.T, ts *testServer, id string, n int) agent.Conversation {
	t.Helper()
	var c agent.Conversation
	waitFor(t, fmt.Sprintf("%d calls waiting", n), func() bool {
		ts.call(t, "GET", "/agentik/conversations/"+id, "", 200, &c)
		return len(c.Waiting) == n
	})
	return c
}

// TestRESTApprove: a waiting call shows in Conversation.waiting and as an
// approval_request; approve over REST runs it with edited arguments; a
// second decision is 409; bad input is 400 and changes nothing.
func TestRESTApprove(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "w1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "sunny in Bergen"})
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("weather?")}}); err != nil {
		t.Fatal(err)
	}
	w := waitWaitingREST(t, ts, c.ID, 1)
	if !w.Running || w.Waiting[0] != "w1" {
		t.Fatalf("waiting conversation %+v", w)
	}
	path := "/agentik/conversations/" + c.ID + "/approve"
	var e agent.Error
	ts.call(t, "POST", path, `{"call_id":"w1","decision":"approve","arguments":"Bergen"}`, 400, &e)
	ts.call(t, "POST", path, `{"call_id":"nope","decision":"approve"}`, 404, &e)
	ts.call(t, "POST", path, `{"call_id":"w1","decision":"perhaps"}`, 400, &e)
	waitWaitingREST(t, ts, c.ID, 1)
	ts.call(t, "POST", path, `{"call_id":"w1","decision":"approve","arguments":{"city":"Bergen"}}`, 200, nil)
	ts.call(t, "POST", path, `{"call_id":"w1","decision":"deny"}`, 409, &e)
	if e.Code != agent.CodeConflict {
		t.Errorf("second decision: %+v, want conflict", e)
	}
	waitIdle(t, ts, c.ID)
	var page struct{ Events []agent.AllEvent }
	ts.call(t, "GET", "/agentik/conversations/"+c.ID+"/events/replay?limit=1000", "", 200, &page)
	var seq []string
	for _, ev := range page.Events {
		switch e := ev.Event; e.Type {
		case agent.EventToolCall, agent.EventApprovalRequest, agent.EventEnd:
			seq = append(seq, e.Type)
		case agent.EventApproval:
			seq = append(seq, e.Type+":"+e.Decision+":"+e.Arguments)
		case agent.EventToolResult:
			seq = append(seq, e.Type+":"+map[bool]string{true: "true", false: "false"}[strings.Contains(e.Result, "Bergen")])
		}
	}
	if got, want := strings.Join(seq, " "), `tool_call approval_request approval:approve:{"city":"Bergen"} tool_result:true end`; got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	// The one decision that held is in the audit log (refusals are not).
	var audit struct{ Entries []agent.AuditEntry }
	ts.call(t, "GET", "/agentik/audit?action=approval_decided", "", 200, &audit)
	if len(audit.Entries) != 1 || audit.Entries[0].Target != c.ID || string(audit.Entries[0].Details) != `{"call_id":"w1","decision":"approve"}` || audit.Entries[0].From.Protocol != "rest" {
		t.Errorf("audit of the decision: %+v", audit.Entries)
	}
}

// TestWSDenyWithReason: a denial over WS reaches the model with its reason.
func TestWSDenyWithReason(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, withApproval())
	c := ts.create(t)
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "w2", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "fine"})
	if _, err := ts.Runner.Start(context.Background(), agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("weather?")}}); err != nil {
		t.Fatal(err)
	}
	waitWaitingREST(t, ts, c.ID, 1)
	ws := dialWS(t, ts)
	ws.fail("approve", map[string]any{"conversation_id": c.ID, "decision": "deny"}, agent.CodeBadRequest) // no call_id
	ws.ok("approve", map[string]any{"conversation_id": c.ID, "call_id": "w2", "decision": "deny", "reason": "no network calls today"}, nil)
	ws.fail("approve", map[string]any{"conversation_id": c.ID, "call_id": "w2", "decision": "approve"}, agent.CodeConflict)
	waitIdle(t, ts, c.ID)
	reqs := ts.Fake.Requests()
	var saw string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" && m.ToolCallID == "w2" {
			saw = m.Content
		}
	}
	if !strings.Contains(saw, "denied") || !strings.Contains(saw, "no network calls today") {
		t.Errorf("the model saw %q, want the denial with its reason", saw)
	}
}

// TestStatelessApprovalWaitIsBounded: a stateless /v1 request whose tool
// call needs approval, on a server without AGENTIK_APPROVAL_TIMEOUT, waits
// at most agent.TempConfig.ApprovalWait (here 1 minute, on an injected
// clock and timer): then the call is denied as timed out, the model reads
// that, and the /v1 response completes with its answer.
func TestStatelessApprovalWaitIsBounded(t *testing.T) {
	if !alone(t) {
		return
	}
	leakCheck(t)
	type timer struct {
		d time.Duration
		f func()
	}
	armed := make(chan timer, 4)
	clk := &backClock{}
	clk.set(time.Minute) // a minute behind: set(0) is a minute later
	ts := newTestServer(t, withApproval(), withClock(clk), func(a *agent.Config, _ *server.Config) {
		a.Temp.ApprovalWait = time.Minute
		a.AfterFunc = func(d time.Duration, f func()) func() bool {
			armed <- timer{d, f}
			return func() bool { return true }
		}
	})
	ts.Fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "w1", Name: "weather__forecast", Arguments: `{"city":"Oslo"}`}}})
	ts.Fake.Enqueue(llmtest.Reply{Text: "Nobody approved the forecast, so I cannot say."})
	answer := statelessCompletion(t, ts, "weather in Oslo?")
	var tm timer
	select {
	case tm = <-armed:
	case got := <-answer:
		t.Fatalf("the request ended before its call waited: %s", got)
	}
	if tm.d <= 59*time.Second || tm.d > time.Minute {
		t.Fatalf("the wait is bounded by %v, want the configured minute", tm.d)
	}
	clk.set(0)
	tm.f()
	if got := <-answer; got != "Nobody approved the forecast, so I cannot say." {
		t.Fatalf("the /v1 response: %s", got)
	}
	reqs := ts.Fake.Requests()
	var saw bool
	for _, m := range reqs[len(reqs)-1].Messages {
		saw = saw || m.Role == "tool" && strings.Contains(m.Content, "approval timed out after 1m0s")
	}
	if !saw {
		t.Errorf("the model did not read the timeout: %+v", reqs[len(reqs)-1].Messages)
	}
}
