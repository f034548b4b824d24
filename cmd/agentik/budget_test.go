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

// TestBudgetCrossedByConcurrentTurns: two turns running when the budget
// is crossed finish the call they are in and begin no other.
func TestBudgetCrossedByConcurrentTurns(t *testing.T) {
	t.Parallel()
	tm := startTeam(t, filepath.Join(t.TempDir(), "agentik.db"), "AGENTIK_DEFAULT_BUDGET=100/day")
	convs := []string{newConv(t, tm, tm.ann.key), newConv(t, tm, tm.ann.key)}
	// Both first calls are held until both have arrived: the two turns
	// provably run when the budget is crossed, however slow the machine.
	hold := make(chan struct{})
	for i := range 6 {
		r := toolRound(300 * time.Millisecond)
		if i < 2 {
			r.Wait, r.Hold = 0, hold
		}
		tm.fake.Enqueue(r)
	}
	var wg sync.WaitGroup
	codes := make([]string, 2)
	statuses := make([]int, 2)
	for i, c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], statuses[i], _ = sendEnd(t, tm, tm.ann.key, c, "go")
		}()
	}
	testwait.For(t, "both turns' first model calls", func() bool { return len(tm.fake.Requests()) >= 2 })
	close(hold)
	wg.Wait()
	started := 0
	for i := range convs {
		if statuses[i] == 200 {
			started++
			if codes[i] != agent.CodeQuotaExceeded {
				t.Errorf("turn %d ended with %q, want quota_exceeded", i, codes[i])
			}
		} else if statuses[i] != 429 {
			t.Errorf("send %d: %d", i, statuses[i])
		}
	}
	t.Logf("%d of 2 turns started", started)
	// Every model call must begin with room left in the budget. Both
	// first calls begin at 0 used; a turn whose first call ends before the
	// other's (70 of 100 used) may begin one more, which then finishes;
	// once both have ended (140) no call may begin. So at most one call
	// more than the turns that ran, never two.
	n := len(tm.fake.Requests())
	if started == 0 || n < started || n > started+1 {
		t.Errorf("%d turns ran (statuses %v, codes %q) and made %d model calls: each at most one past the budget; logs:\n%s", started, statuses, codes, n, tm.p.logs)
	}
	var rep agent.UsageReport
	must(t, tm.ann.key, "GET", tm.p.url("/agentik/usage"), "", &rep)
	if rep.Budget == nil || rep.Budget.Used != int64(70*n) {
		t.Errorf("usage %+v, want %d", rep.Budget, 70*n)
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
