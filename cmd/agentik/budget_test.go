package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// toolRound is a model answer that asks for a tool (which does not
// exist: its error result starts the next round) and costs 70 tokens.
func toolRound(wait time.Duration) llmtest.Reply {
	return llmtest.Reply{Text: "looking", Wait: wait, Usage: &agent.Usage{PromptTokens: 60, CompletionTokens: 10, TotalTokens: 70},
		ToolCalls: []agent.ToolCall{{Name: "lookup", Arguments: `{}`}}}
}

// sendEnd sends text as key and returns the code of the turn's error
// event ("" when it ended without one), or the HTTP status and body of a
// refused send.
func sendEnd(t *testing.T, tm *team, key, conv, text string) (code string, status int, body string) {
	t.Helper()
	st, b := call(t, key, "POST", tm.p.url("/agentik/conversations/"+conv+"/send"), `{"content":[{"type":"text","body":"`+text+`"}]}`)
	if st != 200 {
		return "", st, string(b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Code string }
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "error" {
			code = ev.Code
		}
	}
	return code, 200, string(b)
}

func newConv(t *testing.T, tm *team, key string) string {
	t.Helper()
	var c struct{ ID string }
	must(t, key, "POST", tm.p.url("/agentik/conversations"), `{}`, &c)
	return c.ID
}

// TestBudgetCrossedByOneTurn: the model call that crosses the budget is
// the turn's last (it ends with quota_exceeded instead of the next call);
// the next send is refused with 429 naming the budget and its reset; usage
// survives a restart; an admin's higher budget for the user lets them on.
func TestBudgetCrossedByOneTurn(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "agentik.db")
	tm := startTeam(t, db, "AGENTIK_DEFAULT_BUDGET=100/day")
	conv := newConv(t, tm, tm.ann.key)
	tm.fake.Enqueue(toolRound(0))
	tm.fake.Enqueue(toolRound(0))
	tm.fake.Enqueue(llmtest.Reply{Text: "a third call: past the budget"})
	code, _, body := sendEnd(t, tm, tm.ann.key, conv, "go")
	if code != agent.CodeQuotaExceeded {
		t.Fatalf("the turn ended with %q, want quota_exceeded:\n%s", code, body)
	}
	if n := len(tm.fake.Requests()); n != 2 || tm.fake.Pending() != 1 {
		t.Errorf("%d model calls (%d replies left), want 2: none after the one that crossed", n, tm.fake.Pending())
	}
	_, status, body := sendEnd(t, tm, tm.ann.key, conv, "again")
	if status != 429 || !strings.Contains(body, "quota_exceeded") || !strings.Contains(body, "100/day") || !strings.Contains(body, "resets at") {
		t.Errorf("a send past the budget: %d %s, want 429 quota_exceeded naming 100/day and its reset", status, body)
	}
	// A2A says so in its own shapes: a client's condition, with the reason.
	a2aMsg := `{"message":{"messageId":"` + agent.NewID() + `","role":"ROLE_USER","parts":[{"text":"over"}]}}`
	if _, b := call(t, tm.ann.key, "POST", tm.p.url("/a2a/agentik"), `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+a2aMsg+`}`); !strings.Contains(string(b), `"code":-31429`) ||
		!strings.Contains(string(b), "100/day") || !strings.Contains(string(b), `"code":"quota_exceeded"`) {
		t.Errorf("an A2A JSON-RPC send past the budget: %s, want error -31429 naming 100/day, data.code quota_exceeded", b)
	}
	if status, b := call(t, tm.ann.key, "POST", tm.p.url("/a2a/agentik/message:send"), a2aMsg); status != 429 || !strings.Contains(string(b), "RESOURCE_EXHAUSTED") ||
		!strings.Contains(string(b), "QUOTA_EXCEEDED") || !strings.Contains(string(b), "100/day") {
		t.Errorf("an A2A REST send past the budget: %d %s, want 429 RESOURCE_EXHAUSTED, reason QUOTA_EXCEEDED, naming 100/day", status, b)
	}
	// bob has a budget of his own.
	bobConv := newConv(t, tm, tm.bob.key)
	if code, status, body := sendEnd(t, tm, tm.bob.key, bobConv, "hi"); status != 200 || code != "" {
		t.Errorf("bob's send: %d %q %s", status, code, body)
	}

	var rep agent.UsageReport
	must(t, tm.ann.key, "GET", tm.p.url("/agentik/usage"), "", &rep)
	if len(rep.Days) != 1 || rep.Days[0].PromptTokens != 120 || rep.Days[0].CompletionTokens != 20 || rep.Budget == nil || rep.Budget.Used != 140 || rep.Budget.Tokens != 100 {
		t.Errorf("ann's usage: %+v", rep)
	}
	if code, _ := call(t, tm.ann.key, "GET", tm.p.url("/agentik/usage?user="+tm.bob.id), ""); code != 403 {
		t.Errorf("ann reading bob's usage: %d, want 403", code)
	}
	must(t, tm.admin, "GET", tm.p.url("/agentik/usage"), "", &rep)
	if len(rep.Days) != 2 {
		t.Errorf("the admin's usage: %+v, want ann's and bob's day", rep)
	}

	// Durable: after a restart ann is still over.
	_ = tm.p.cmd.Process.Kill()
	_ = tm.p.cmd.Wait()
	tm.p = start(t, tm.p.addr, db, tm.env...)
	if _, status, body := sendEnd(t, tm, tm.ann.key, conv, "after restart"); status != 429 {
		t.Errorf("after a restart: %d %s, want 429", status, body)
	}
	must(t, tm.admin, "PATCH", tm.p.url("/agentik/users/"+tm.ann.id), `{"budget":"1k/day"}`, nil)
	tm.fake.Enqueue(llmtest.Reply{Text: "welcome back"})
	if code, status, body := sendEnd(t, tm, tm.ann.key, conv, "more"); status != 200 || code != "" {
		t.Errorf("with a higher budget: %d %q %s", status, code, body)
	}
	if code, _ := call(t, tm.admin, "PATCH", tm.p.url("/agentik/users/"+tm.ann.id), `{"budget":"lots"}`); code != 400 {
		t.Errorf("a budget that does not parse: %d, want 400", code)
	}
}

// TestBudgetCrossedByConcurrentTurns: 20 one-call turns sent at once on
// a 300/day budget use at most one call's worth past it: each model call
// reserves its estimate before it is made (agent/budget.go), so the calls
// in flight never add up past the budget. All the calls the budget
// admits are held until every send was either refused or reached the
// model: without the reservation all 20 reach it (1,100 tokens).
func TestBudgetCrossedByConcurrentTurns(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"), "AGENTIK_DEFAULT_BUDGET=300/day")
	const n, cost = 20, 55
	convs := make([]string, n)
	for i := range convs {
		convs[i] = newConv(t, tm, tm.ann.key)
	}
	hold := make(chan struct{})
	for range n {
		tm.fake.Enqueue(llmtest.Reply{Text: "one call", Hold: hold, Usage: &agent.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: cost}})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ended := 0
	for _, c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, status, body := sendEnd(t, tm, tm.ann.key, c, "go")
			if status != 200 && status != 429 || status == 200 && code != "" && code != agent.CodeQuotaExceeded {
				t.Errorf("a send: %d %q %s", status, code, body)
			}
			mu.Lock()
			ended++
			mu.Unlock()
		}()
	}
	// A send still running is either at the model (held) or about to be
	// refused: wait until every one is one or the other.
	testwait.For(t, "every send refused or at the model", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ended+len(tm.fake.Requests()) >= n
	})
	close(hold)
	wg.Wait()
	calls := len(tm.fake.Requests())
	var rep agent.UsageReport
	must(t, tm.ann.key, "GET", tm.p.url("/agentik/usage"), "", &rep)
	if rep.Budget == nil || rep.Budget.Used != int64(cost*calls) || rep.Budget.Used > 300+cost || calls == 0 {
		t.Errorf("%d model calls, usage %+v: want at most one call (%d tokens) past the budget of 300", calls, rep.Budget, cost)
	}
}

// TestBadBudgetFailsStart: a budget that does not parse stops the start,
// naming the variable.
func TestBadBudgetFailsStart(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := run(t.Context(), []string{"--db", "sqlite:" + filepath.Join(t.TempDir(), "a.db")},
		func(k string) string {
			if k == "AGENTIK_DEFAULT_BUDGET" {
				return "two million"
			}
			return ""
		}, strings.NewReader(""), &out, &out)
	if err == nil || !strings.Contains(err.Error(), "AGENTIK_DEFAULT_BUDGET") || !strings.Contains(err.Error(), "2M/month") {
		t.Fatalf("start with a bad budget: %v", err)
	}
}
