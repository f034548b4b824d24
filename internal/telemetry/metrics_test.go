package telemetry_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// scrape GETs /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, rg *rig) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(rg.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the value of the metric of family name whose labels include
// want (a counter's or gauge's value; a histogram's sample count). Missing: 0.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func histSum(fams map[string]*dto.MetricFamily, name string) float64 {
	s := 0.0
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			s += m.Histogram.GetSampleSum()
		}
	}
	return s
}

func TestMetricsAfterTurns(t *testing.T) {
	rg := newRig(t, nil)
	id := rg.create(t)

	// A turn whose tool fails: the turn itself ends ok.
	rg.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "fs__fail", Arguments: "{}"}},
		Usage: &agent.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}})
	rg.fake.Enqueue(llmtest.Reply{Text: "it failed", Usage: &agent.Usage{PromptTokens: 20, CompletionTokens: 3, TotalTokens: 23}})
	if out := rg.send(t, id, "read it"); !strings.Contains(out, "it failed") {
		t.Fatalf("turn 1: %s", out)
	}
	rg.waitIdle(t, id)

	// A turn interrupted while the model streams.
	hold := make(chan struct{})
	defer close(hold)
	rg.fake.Enqueue(llmtest.Reply{Text: "never", Hold: hold})
	done := make(chan string)
	go func() {
		body := `{"content":[{"type":"text","body":"wait"}]}`
		resp, err := http.Post(rg.URL+"/agentik/conversations/"+id+"/send", "application/json", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		done <- b.String()
	}()
	testwait.For(t, "the third model call", func() bool { return len(rg.fake.Requests()) >= 3 })
	if code, body := rg.do(t, "POST", "/agentik/conversations/"+id+"/interrupt", ""); code != 200 {
		t.Fatalf("interrupt: %d %s", code, body)
	}
	if out := <-done; !strings.Contains(out, "interrupted") {
		t.Fatalf("turn 2: %s", out)
	}
	rg.waitIdle(t, id)

	// A turn the model fails.
	rg.fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "bad request"})
	rg.send(t, id, "fail")
	rg.waitIdle(t, id)

	// A refused resume (cursor ahead) counts as a broker drop.
	if code, _ := rg.do(t, "GET", "/agentik/events/all?after=999999", ""); code/100 == 2 {
		t.Fatalf("resume ahead of the head answered %d", code)
	}

	// Turn metrics come from the event stream: wait until all three are in
	// (their counts and their durations: the watcher records one, then the
	// other, and a scrape may fall between) and the log is still (a title
	// may be committed after a turn's end): a scrape between two equal
	// heads saw every commit up to that head.
	var fams map[string]*dto.MetricFamily
	var head int64
	testwait.For(t, "three turns counted and the log still", func() bool {
		_, before, err := rg.store.Bounds(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fams = scrape(t, rg)
		if _, head, err = rg.store.Bounds(context.Background()); err != nil {
			t.Fatal(err)
		}
		still := before == head && value(fams, "agentik_events_appended_total") == float64(head)
		return value(fams, "agentik_turns_total") >= 3 && value(fams, "agentik_turn_duration_seconds") >= 3 && still
	})
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"agentik_turns_total", nil, 3},
		{"agentik_turns_total", []string{"outcome", "ok"}, 1},
		{"agentik_turns_total", []string{"outcome", "interrupted"}, 1},
		{"agentik_turns_total", []string{"outcome", "error"}, 1},
		{"agentik_turn_duration_seconds", nil, 3},
		{"agentik_model_requests_total", []string{"model", "fake"}, 4},
		{"agentik_model_errors_total", nil, 1},
		{"agentik_model_errors_total", []string{"model", "fake", "code", agent.CodeModelError}, 1},
		{"agentik_model_request_duration_seconds", nil, 4},
		{"agentik_model_time_to_first_token_seconds", nil, 2}, // turn 1's two calls streamed a delta (the tool call's arguments stream as deltas since bd99d8c), not the interrupted or the failed call
		{"agentik_model_tokens_total", []string{"kind", "prompt"}, 30},
		{"agentik_model_tokens_total", []string{"kind", "completion"}, 5},
		{"agentik_tool_calls_total", nil, 1},
		{"agentik_tool_calls_total", []string{"server", "fs", "outcome", "error"}, 1},
		{"agentik_tool_call_duration_seconds", []string{"server", "fs"}, 1},
		{"agentik_http_requests_total", []string{"route", "POST /agentik/conversations/{conversation_id}/send", "status", "200"}, 3},
		{"agentik_http_requests_total", []string{"route", "POST /agentik/conversations/{conversation_id}/interrupt", "status", "200"}, 1},
		{"agentik_http_requests_total", []string{"route", "POST /agentik/conversations", "status", "201"}, 1},
		{"agentik_http_requests_total", []string{"route", "GET /agentik/events/all", "status", "400"}, 1},
		{"agentik_broker_drops_total", []string{"reason", "cursor_ahead"}, 1},
		{"agentik_events_appended_total", nil, float64(head)},
		{"agentik_open_streams", []string{"kind", "sse"}, 0},
		{"agentik_open_streams", []string{"kind", "ws"}, 0},
		{"agentik_subscriptions", nil, 0}, // the turns are counted from the commits, not a subscription
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := histSum(fams, "agentik_event_batch_size"); got != float64(head) {
		t.Errorf("batch sizes add up to %v, want %v events", got, head)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	// No conversation id in any label.
	for name, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if strings.Contains(l.GetValue(), id) {
					t.Errorf("%s has label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func TestMetricsCountOpenStreams(t *testing.T) {
	rg := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", rg.URL+"/agentik/events/all", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(rg.URL, "http")+"/agentik/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	fams := scrape(t, rg)
	if got := value(fams, "agentik_open_streams", "kind", "ws"); got != 1 {
		t.Errorf("open WebSockets = %v, want 1", got)
	}
	if got := value(fams, "agentik_open_streams", "kind", "sse"); got != 1 {
		t.Errorf("open sse streams = %v, want 1", got)
	}
	if got := value(fams, "agentik_subscriptions"); got != 1 {
		t.Errorf("subscriptions = %v, want 1 (the stream)", got)
	}
}

// What waits for people shows as gauges read from the database (right
// after a restart too), and compactions as a counter from the event log.
func TestMetricsCountWaitsQueuesAndCompactions(t *testing.T) {
	rg := newRig(t, nil, func(c *agent.Config) { c.Approval = func(name string) bool { return name == "fs__read" } })
	ctx := context.Background()
	id := rg.create(t)
	rg.send(t, id, "one")
	rg.send(t, id, "two")
	rg.waitIdle(t, id)
	if code, body := rg.do(t, "POST", "/agentik/conversations/"+id+"/compact", ""); code != 200 || !strings.Contains(body, `"compacted":true`) {
		t.Fatalf("compact: %d %s", code, body)
	}

	// A call waits for approval; two sends queue behind it.
	rg.fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "fs__read", Arguments: "{}"}}})
	if _, err := rg.runner.Start(ctx, agent.StartInput{ConversationID: id, Content: []agent.Content{agent.Text("read it")}}); err != nil {
		t.Fatal(err)
	}
	metricReaches(t, rg, "agentik_approvals_waiting", 1)
	for _, text := range []string{"next", "and next"} {
		if res, err := rg.runner.Start(ctx, agent.StartInput{ConversationID: id, Content: []agent.Content{agent.Text(text)}, OnBusy: agent.OnBusyQueue}); err != nil || !res.Queued {
			t.Fatalf("queue %q: %+v, %v", text, res, err)
		}
	}
	fams := scrape(t, rg)
	for _, c := range []struct {
		name string
		want float64
	}{{"agentik_approvals_waiting", 1}, {"agentik_queued_sends", 2}, {"agentik_compactions_total", 1}} {
		if fams[c.name] == nil {
			t.Fatalf("no %s in the scrape", c.name)
		}
		if got := value(fams, c.name); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}

	// The decision ends the wait; the queued sends run and leave the queue.
	if err := rg.runner.Approve(ctx, id, agent.ApprovalInput{CallID: "c1", Decision: agent.DecisionDeny}); err != nil {
		t.Fatal(err)
	}
	metricReaches(t, rg, "agentik_approvals_waiting", 0)
	metricReaches(t, rg, "agentik_queued_sends", 0)
}

// metricReaches scrapes until the family is present with value want.
func metricReaches(t *testing.T, rg *rig, name string, want float64) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%s = %v", name, want), func() bool {
		fams := scrape(t, rg)
		return fams[name] != nil && value(fams, name) == want
	})
}

// TestMetricsCountStatelessTurns: a stateless chat completion runs its
// turn in a temporary conversation, kept in no log: its turn counts as
// any other, and its events are not counted as appended.
func TestMetricsCountStatelessTurns(t *testing.T) {
	rg := newRig(t, nil)
	rg.fake.Enqueue(llmtest.Reply{Text: "stateless"})
	code, body := rg.do(t, "POST", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`)
	if code != http.StatusOK || !strings.Contains(body, "stateless") {
		t.Fatalf("completion: %d %s", code, body)
	}
	var fams map[string]*dto.MetricFamily
	testwait.For(t, "the stateless turn counted", func() bool {
		fams = scrape(t, rg)
		return value(fams, "agentik_turns_total", "outcome", "ok") == 1
	})
	if got := value(fams, "agentik_events_appended_total"); got != 0 {
		t.Errorf("events appended = %v, want 0 (a temporary conversation's are kept in no log)", got)
	}
}
