package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newModel makes a Model for baseURL with a fast retry policy.
func newModel(t testing.TB, baseURL string, edit ...func(*Config)) *Model {
	t.Helper()
	cfg := Config{BaseURL: baseURL, APIKey: "test-key-0000", Model: "fake-model"}
	for _, e := range edit {
		e(&cfg)
	}
	if cfg.HTTPClient == nil {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.retry.base = time.Millisecond
	return m
}

func userText(s string) agent.ChatRequest {
	return agent.ChatRequest{Messages: []agent.ModelMessage{
		{Role: agent.RoleSystem, Content: []agent.Content{agent.Text("be brief")}},
		{Role: agent.RoleUser, Content: []agent.Content{agent.Text(s)}},
	}}
}

// recorder collects deltas.
type recorder struct{ deltas []agent.Delta }

func (r *recorder) on(d agent.Delta) error {
	r.deltas = append(r.deltas, d)
	return nil
}

func (r *recorder) text() string {
	var b strings.Builder
	for _, d := range r.deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}

func (r *recorder) reasoning() string {
	var b strings.Builder
	for _, d := range r.deltas {
		b.WriteString(d.Reasoning)
	}
	return b.String()
}

func TestChatStreamsText(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	m := newModel(t, url)
	var rec recorder
	resp, err := m.Chat(t.Context(), userText("hello there world"), rec.on)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if got, want := resp.Text, "You said: hello there world"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	if got := rec.text(); got != resp.Text {
		t.Errorf("deltas = %q, want %q", got, resp.Text)
	}
	if got, want := len(rec.deltas), 5; got != want {
		t.Errorf("%d deltas, want %d (word by word)", got, want)
	}
	for _, d := range rec.deltas {
		if d.Text == "" || d.Reasoning != "" || d.Image != nil {
			t.Errorf("delta %+v: want exactly Text set", d)
		}
	}
	// prompt: "be brief" + "hello there world" = 5 words; 5 chunks.
	if got, want := resp.Usage, (agent.Usage{PromptTokens: 5, CompletionTokens: 5, TotalTokens: 10}); got != want {
		t.Errorf("Usage = %+v, want %+v", got, want)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || !r.IncludeUsage || r.Model != "fake-model" {
		t.Errorf("request stream=%v include_usage=%v model=%q", r.Stream, r.IncludeUsage, r.Model)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-key-0000" {
		t.Errorf("Authorization = %q", got)
	}
	if got := m.Name(); got != "fake-model" {
		t.Errorf("Name = %q", got)
	}
}

func TestChatReasoning(t *testing.T) {
	tests := []struct {
		field string
		chunk int
	}{
		{llmtest.FieldReasoningContent, 0},
		{llmtest.FieldReasoning, 0},
		{llmtest.FieldThink, 0},
		{llmtest.FieldThink, 1},
		{llmtest.FieldThink, 2},
		{llmtest.FieldThink, 3},
		{llmtest.FieldThink, 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.field, tt.chunk), func(t *testing.T) {
			fake, url := llmtest.NewHTTPServer(t)
			fake.Enqueue(llmtest.Reply{Reasoning: "I think, therefore <I> am.", ReasoningField: tt.field, Text: "Answer: 42.", ChunkSize: tt.chunk})
			m := newModel(t, url)
			var rec recorder
			resp, err := m.Chat(t.Context(), userText("q"), rec.on)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if got, want := resp.Reasoning, "I think, therefore <I> am."; got != want {
				t.Errorf("Reasoning = %q, want %q", got, want)
			}
			if got, want := resp.Text, "Answer: 42."; got != want {
				t.Errorf("Text = %q, want %q", got, want)
			}
			if rec.reasoning() != resp.Reasoning || rec.text() != resp.Text {
				t.Errorf("deltas reasoning=%q text=%q, want the response", rec.reasoning(), rec.text())
			}
			// Arrival order: all reasoning before any text.
			seenText := false
			for _, d := range rec.deltas {
				if d.Text != "" {
					seenText = true
				}
				if d.Reasoning != "" && seenText {
					t.Fatalf("reasoning delta %q after text", d.Reasoning)
				}
			}
		})
	}
}

func TestThinkSplitterEverySplit(t *testing.T) {
	const in = "  <think>a<b</thin</think>\n\nHello </think> <think>x"
	const wantR, wantT = "a<b</thin", "Hello </think> <think>x"
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			var ts thinkSplitter
			var r, txt strings.Builder
			for _, part := range []string{in[:i], in[i:j], in[j:]} {
				for _, p := range append(ts.split(part), []piece(nil)...) {
					if p.reasoning {
						r.WriteString(p.s)
					} else {
						txt.WriteString(p.s)
					}
				}
			}
			for _, p := range ts.flush() {
				if p.reasoning {
					r.WriteString(p.s)
				} else {
					txt.WriteString(p.s)
				}
			}
			if r.String() != wantR || txt.String() != wantT {
				t.Fatalf("split at %d,%d: reasoning %q text %q", i, j, r.String(), txt.String())
			}
		}
	}
}

func TestThinkSplitterEdges(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		wantR  string
		wantT  string
	}{
		{"no tag", []string{"Hello", " world"}, "", "Hello world"},
		{"tag mid-answer is text", []string{"Use ", "<think>", " tags"}, "", "Use <think> tags"},
		{"partial tag at end is text", []string{"<thi"}, "", "<thi"},
		{"unclosed think is reasoning", []string{"<think>hmm", " </thi"}, "hmm </thi", ""},
		{"leading whitespace kept for text", []string{"\n", "Hi"}, "", "\nHi"},
		{"empty think", []string{"<think></think>", "ok"}, "", "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts thinkSplitter
			var ps []piece
			for _, c := range tt.chunks {
				ps = append(ps, ts.split(c)...)
			}
			ps = append(ps, ts.flush()...)
			var r, txt string
			for _, p := range ps {
				if p.reasoning {
					r += p.s
				} else {
					txt += p.s
				}
			}
			if r != tt.wantR || txt != tt.wantT {
				t.Errorf("got reasoning %q text %q, want %q %q", r, txt, tt.wantR, tt.wantT)
			}
		})
	}
}

func TestChatToolCallSplitAcrossChunks(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	args := `{"path":"/tmp/a b.txt","lines":[1,2,3]}`
	fake.Enqueue(llmtest.Reply{Text: "Let me look.", ToolCalls: []agent.ToolCall{{ID: "call_x", Name: "fs__read", Arguments: args}}, SplitArgs: true})
	m := newModel(t, url)
	req := userText("read it")
	req.Tools = []agent.ToolSpec{
		{Name: "fs__read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Name: "clock__now"},
	}
	var rec recorder
	resp, err := m.Chat(t.Context(), req, rec.on)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := []agent.ToolCall{{ID: "call_x", Name: "fs__read", Arguments: args}}
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Errorf("ToolCalls = %+v, want %+v", resp.ToolCalls, want)
	}
	if resp.Text != "Let me look." {
		t.Errorf("Text = %q", resp.Text)
	}
	tools := fake.Requests()[0].Tools
	if len(tools) != 2 || tools[0].Name != "fs__read" || tools[0].Description != "Read a file" {
		t.Fatalf("tools sent = %+v", tools)
	}
	if got, want := string(tools[0].Parameters), `{"type":"object","properties":{"path":{"type":"string"}}}`; got != want {
		t.Errorf("parameters = %s, want %s", got, want)
	}
	if got, want := string(tools[1].Parameters), `{"type":"object","properties":{}}`; got != want {
		t.Errorf("empty parameters sent as %s, want %s", got, want)
	}
}

func TestChatParallelToolCallsReusingIndexZero(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprint("split=", split), func(t *testing.T) {
			fake, url := llmtest.NewHTTPServer(t)
			fake.Enqueue(llmtest.Reply{SameIndex: true, SplitArgs: split, ToolCalls: []agent.ToolCall{
				{ID: "a1", Name: "weather", Arguments: `{"city":"Paris"}`},
				{ID: "b2", Name: "weather", Arguments: `{"city":"Oslo"}`},
			}})
			m := newModel(t, url)
			resp, err := m.Chat(t.Context(), userText("weather?"), func(agent.Delta) error { return nil })
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			want := []agent.ToolCall{
				{ID: "a1", Name: "weather", Arguments: `{"city":"Paris"}`},
				{ID: "b2", Name: "weather", Arguments: `{"city":"Oslo"}`},
			}
			if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
				t.Errorf("ToolCalls = %+v, want %+v", resp.ToolCalls, want)
			}
		})
	}
}

// rawServer answers every chat request with body as an SSE stream.
func rawServer(t *testing.T, body string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

func TestChatRawStreams(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    agent.ChatResponse
		wantErr string
	}{
		{
			name: "tool calls without ids get ids, empty arguments become {}",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"b","arguments":"{\"x\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`,
			want: agent.ChatResponse{ToolCalls: []agent.ToolCall{{Name: "a", Arguments: "{}"}, {Name: "b", Arguments: `{"x":1}`}}},
		},
		{
			name: "reasoning_content wins over reasoning; null content and odd fields ignored",
			body: `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"r1","reasoning":"r1"}}]}

: keep-alive comment

data: {"choices":[{"index":0,"delta":{"reasoning":{"odd":true},"content":"hi"},"finish_reason":null}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}

data: [DONE]

`,
			want: agent.ChatResponse{Reasoning: "r1", Text: "hi", Usage: agent.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		},
		{
			name: "usage out of range is not believed (negative, int64 max, past 2^30, fractional, a string)",
			body: `data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-5,"completion_tokens":9223372036854775807,"total_tokens":1e30}}

data: [DONE]

`,
			want: agent.ChatResponse{Text: "a"},
		},
		{
			name: "usage with a string count is not believed; a missing total is the sum",
			body: `data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"7","completion_tokens":2}}

data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2.5}}

data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}

data: [DONE]

`,
			want: agent.ChatResponse{Text: "a", Usage: agent.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		},
		{
			name:    "EOF without finish_reason is a cut",
			body:    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n",
			want:    agent.ChatResponse{Text: "par"},
			wantErr: "model: the stream ended before the answer was complete",
		},
		{
			name:    "error event mid-stream",
			body:    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded, key sk-proj-abcdef123456\",\"type\":\"server_error\"}}\n\n",
			want:    agent.ChatResponse{Text: "a"},
			wantErr: "model: overloaded, key [redacted]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, rawServer(t, tt.body))
			resp, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if tt.wantErr != "" {
				if err == nil || errDetail(err) != tt.wantErr || agent.ErrorCode(err) != agent.CodeModelError {
					t.Fatalf("err = %v (code %s), want model_error %q", err, agent.ErrorCode(err), tt.wantErr)
				}
			}
			for i := range resp.ToolCalls {
				if !strings.HasPrefix(resp.ToolCalls[i].ID, "call_") {
					t.Errorf("call %d id = %q, want a generated call_…", i, resp.ToolCalls[i].ID)
				}
				resp.ToolCalls[i].ID = ""
			}
			if fmt.Sprint(resp) != fmt.Sprint(tt.want) {
				t.Errorf("resp = %+v, want %+v", resp, tt.want)
			}
		})
	}
}

func TestChatScriptedUsage(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	want := agent.Usage{PromptTokens: 120, CompletionTokens: 7, TotalTokens: 127}
	fake.Enqueue(llmtest.Reply{Text: "ok", Usage: &want})
	resp, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestChatRetries(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		fake.Enqueue(llmtest.Reply{Status: 429, ErrorMessage: "slow down"})
		fake.Enqueue(llmtest.Reply{Text: "finally"})
		resp, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if err != nil || resp.Text != "finally" {
			t.Fatalf("Chat = %q, %v; want finally", resp.Text, err)
		}
		if got := len(fake.Requests()); got != 2 {
			t.Errorf("%d requests, want 2", got)
		}
	})
	t.Run("500 three times", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		for range 4 {
			fake.Enqueue(llmtest.Reply{Status: 500, ErrorMessage: "upstream exploded"})
		}
		_, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if agent.ErrorCode(err) != agent.CodeModelError || errDetail(err) != "model: 500 Internal Server Error: upstream exploded" {
			t.Fatalf("err = %v (%s), want model_error 500", err, agent.ErrorCode(err))
		}
		if !errors.Is(err, agent.ErrModel) {
			t.Errorf("errors.Is(err, agent.ErrModel) = false")
		}
		if got := len(fake.Requests()); got != 3 {
			t.Errorf("%d requests, want 3", got)
		}
	})
	t.Run("400 is not retried", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "bad tool schema"})
		_, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if err == nil || errDetail(err) != "model: 400 Bad Request: bad tool schema" {
			t.Fatalf("err = %v", err)
		}
		if got := len(fake.Requests()); got != 1 {
			t.Errorf("%d requests, want 1", got)
		}
	})
	t.Run("Retry-After beyond the budget", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		fake.Enqueue(llmtest.Reply{Status: 429, RetryAfter: 30 * time.Second})
		fake.Enqueue(llmtest.Reply{Text: "too late"})
		_, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if agent.ErrorCode(err) != agent.CodeModelError || !strings.Contains(err.Error(), "429") {
			t.Fatalf("err = %v, want model_error 429", err)
		}
		if got := len(fake.Requests()); got != 1 {
			t.Errorf("%d requests, want 1: a 30 s Retry-After does not fit a 10 s budget", got)
		}
	})
	t.Run("Retry-After within the budget", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		fake.Enqueue(llmtest.Reply{Status: 503, RetryAfter: time.Second})
		fake.Enqueue(llmtest.Reply{Text: "ok"})
		m := newModel(t, url)
		m.retry.budget = 500 * time.Millisecond
		_, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if err == nil {
			t.Fatalf("Chat succeeded; a 1 s Retry-After does not fit a 500 ms budget")
		}
		m.retry.budget = 5 * time.Second
		fake.Enqueue(llmtest.Reply{Status: 503, RetryAfter: time.Second})
		fake.Enqueue(llmtest.Reply{Text: "ok"})
		resp, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if err != nil || resp.Text != "ok" {
			t.Fatalf("Chat = %q, %v; want ok after honouring Retry-After", resp.Text, err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		url := ts.URL + "/v1"
		ts.Close()
		_, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if agent.ErrorCode(err) != agent.CodeModelError || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("err = %v, want model_error connection refused", err)
		}
	})
}

func TestChatNoRetryAfterFirstDelta(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	fake.Enqueue(llmtest.Reply{Text: "one two three four five six", CutAfter: 3})
	fake.Enqueue(llmtest.Reply{Text: "must not be asked"})
	var rec recorder
	resp, err := newModel(t, url).Chat(t.Context(), userText("x"), rec.on)
	if agent.ErrorCode(err) != agent.CodeModelError {
		t.Fatalf("err = %v, want model_error", err)
	}
	if got, want := resp.Text, "one two three"; got != want {
		t.Errorf("partial Text = %q, want %q", got, want)
	}
	if rec.text() != resp.Text {
		t.Errorf("deltas %q != response %q", rec.text(), resp.Text)
	}
	if got := len(fake.Requests()); got != 1 {
		t.Errorf("%d requests, want 1 (no retry after the first delta)", got)
	}
}

func TestChatCutBeforeFirstDeltaIsRetried(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	fake.Enqueue(llmtest.Reply{ToolCalls: []agent.ToolCall{{Name: "t", Arguments: `{"a":1}`}}, SplitArgs: true, CutAfter: 2})
	fake.Enqueue(llmtest.Reply{Text: "second try"})
	resp, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
	if err != nil || resp.Text != "second try" || len(resp.ToolCalls) != 0 {
		t.Fatalf("Chat = %+v, %v; want the second attempt alone", resp, err)
	}
}

func TestChatCancelMidStream(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	fake.Enqueue(llmtest.Reply{Reasoning: "pondering deeply", Text: "a b c d e f g h i j", Delay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var rec recorder
	resp, err := newModel(t, url).Chat(ctx, userText("x"), func(d agent.Delta) error {
		rec.on(d)
		if len(rec.deltas) == 4 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || err != context.Canceled {
		t.Fatalf("err = %#v, want context.Canceled itself", err)
	}
	if resp.Reasoning != "pondering deeply" || !strings.HasPrefix(resp.Text, "a b") || len(resp.Text) >= len("a b c d e f g h i j") {
		t.Errorf("partial = %+v, want the reasoning and some text", resp)
	}
	if rec.text() != resp.Text {
		t.Errorf("deltas %q != response %q", rec.text(), resp.Text)
	}
}

func TestChatCancelWhileHeld(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	hold := make(chan struct{})
	defer close(hold)
	fake.Enqueue(llmtest.Reply{Text: "never", Hold: hold})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := newModel(t, url).Chat(ctx, userText("x"), func(agent.Delta) error { return nil })
		errc <- err
	}()
	testwait.For(t, "the request at the model", func() bool { return len(fake.Requests()) > 0 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestChatCallbackError(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	fake.Enqueue(llmtest.Reply{Text: "a b c"})
	stop := errors.New("stop here")
	resp, err := newModel(t, url).Chat(t.Context(), userText("x"), func(d agent.Delta) error { return stop })
	if err != stop {
		t.Fatalf("err = %v, want the callback's error unchanged", err)
	}
	if resp.Text != "a" {
		t.Errorf("Text = %q, want the first delta", resp.Text)
	}
	if got := len(fake.Requests()); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}

func TestChatTimeouts(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		hold := make(chan struct{})
		defer close(hold)
		for range 3 {
			fake.Enqueue(llmtest.Reply{Text: "never", Hold: hold})
		}
		m := newModel(t, url, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond })
		_, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if agent.ErrorCode(err) != agent.CodeModelError || errDetail(err) != "model: no data from fake-model for 50ms" {
			t.Fatalf("err = %v, want idle model_error", err)
		}
		if got := len(fake.Requests()); got != 3 {
			t.Errorf("%d requests, want 3 (silence before the first delta is retried)", got)
		}
	})
	t.Run("idle, but streaming", func(t *testing.T) {
		// Every read moves the idle deadline: a stream whose pieces
		// come well within it runs far longer than it.
		fake, url := llmtest.NewHTTPServer(t)
		fake.Enqueue(llmtest.Reply{Text: strings.Repeat("w ", 40), Delay: 60 * time.Millisecond})
		m := newModel(t, url, func(c *Config) { c.IdleTimeout = time.Second })
		start := time.Now()
		resp, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if err != nil || resp.Text != strings.Repeat("w ", 40) {
			t.Fatalf("text %q, err %v; want the whole answer", resp.Text, err)
		}
		if took := time.Since(start); took < 2*time.Second {
			t.Fatalf("the answer took %s, not the several idle timeouts the test needs", took)
		}
	})
	t.Run("whole call", func(t *testing.T) {
		fake, url := llmtest.NewHTTPServer(t)
		fake.Enqueue(llmtest.Reply{Text: strings.Repeat("w ", 100), Delay: 10 * time.Millisecond})
		m := newModel(t, url, func(c *Config) { c.Timeout = 100 * time.Millisecond })
		resp, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
		if agent.ErrorCode(err) != agent.CodeModelError || errDetail(err) != "model: no complete answer within 100ms" {
			t.Fatalf("err = %v, want call-timeout model_error", err)
		}
		if resp.Text == "" {
			t.Errorf("partial text lost")
		}
	})
}

func TestChatSendsImagesAndReasoning(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	req := agent.ChatRequest{Messages: []agent.ModelMessage{
		{Role: agent.RoleSystem, Content: []agent.Content{agent.Text("sys")}},
		{Role: agent.RoleUser, Content: []agent.Content{agent.Text("first")}},
		{Role: agent.RoleAssistant, Content: []agent.Content{agent.Text("old answer")}, Reasoning: "old thoughts"},
		{Role: agent.RoleUser, Content: []agent.Content{
			agent.Text("what is this?"),
			{Type: agent.ContentImage, Mime: "image/png", Data: "iVBORw0KGgo="},
			{Type: "video", Raw: json.RawMessage(`{"type":"video"}`)},
		}},
		{Role: agent.RoleAssistant, Reasoning: "need a tool", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "vision__describe", Arguments: ""}}},
		{Role: agent.RoleTool, ToolCallID: "c1", Name: "vision__describe", Content: []agent.Content{agent.Text("a cat")}},
	}}
	if _, err := newModel(t, url).Chat(t.Context(), req, func(agent.Delta) error { return nil }); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	got := fake.Requests()[0].Messages
	if len(got) != 6 {
		t.Fatalf("%d messages sent, want 6", len(got))
	}
	if got[1].Content != "first" || got[1].Parts != nil {
		t.Errorf("text-only user message = %+v, want a string content", got[1])
	}
	if got[2].ReasoningContent != "" {
		t.Errorf("reasoning of an earlier turn was resent: %q", got[2].ReasoningContent)
	}
	wantParts := []llmtest.Part{{Type: "text", Text: "what is this?"}, {Type: "image_url", ImageURL: "data:image/png;base64,iVBORw0KGgo="}}
	if fmt.Sprint(got[3].Parts) != fmt.Sprint(wantParts) {
		t.Errorf("parts = %+v, want %+v", got[3].Parts, wantParts)
	}
	if got[4].ReasoningContent != "need a tool" {
		t.Errorf("reasoning of the current turn = %q, want it resent", got[4].ReasoningContent)
	}
	if want := []agent.ToolCall{{ID: "c1", Name: "vision__describe", Arguments: "{}"}}; fmt.Sprint(got[4].ToolCalls) != fmt.Sprint(want) {
		t.Errorf("tool calls = %+v, want %+v", got[4].ToolCalls, want)
	}
	if got[5].Role != "tool" || got[5].ToolCallID != "c1" || got[5].Content != "a cat" {
		t.Errorf("tool message = %+v", got[5])
	}
}

func TestChatRedactsSecrets(t *testing.T) {
	fake, url := llmtest.NewHTTPServer(t)
	fake.Enqueue(llmtest.Reply{Status: 401, ErrorMessage: "Incorrect API key provided: my-very-secret-key. Also sk-live-abcdef123456 and Bearer eyJhbGciOi.x-y and https://h/x?api_key=zzz&b=1"})
	m := newModel(t, url, func(c *Config) { c.APIKey = "my-very-secret-key" })
	_, err := m.Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
	if err == nil {
		t.Fatal("Chat succeeded")
	}
	msg := err.Error()
	for _, secret := range []string{"my-very-secret-key", "sk-live", "eyJhbGciOi", "zzz"} {
		if strings.Contains(msg, secret) {
			t.Errorf("message %q leaks %q", msg, secret)
		}
	}
	if want := "The model endpoint refused the API key. Check OPENAI_API_KEY.\nmodel: 401 Unauthorized: Incorrect API key provided: [redacted]. Also [redacted] and Bearer [redacted] and https://h/x?api_key=[redacted]&b=1"; msg != want {
		t.Errorf("message = %q, want %q", msg, want)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{BaseURL: "http://x/v1"},
		{BaseURL: "ftp://x/v1", Model: "m"},
		{BaseURL: "localhost:8080", Model: "m"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	m, err := New(Config{Model: "m"})
	if err != nil || m.timeout != DefaultTimeout || m.idle != DefaultIdleTimeout {
		t.Errorf("New defaults: %v, %+v", err, m)
	}
}

func TestRetryWait(t *testing.T) {
	p := retryPolicy{attempts: 3, budget: 10 * time.Second, base: 500 * time.Millisecond}
	for n := 1; n <= 2; n++ {
		for range 100 {
			d, ok := p.wait(n, "", 10*time.Second)
			lo, hi := p.base<<(n-1)/2, p.base<<(n-1)
			if !ok || d < lo || d > hi {
				t.Fatalf("wait(%d) = %v, %v; want within [%v, %v]", n, d, ok, lo, hi)
			}
		}
	}
	if d, ok := p.wait(1, "2", 10*time.Second); !ok || d != 2*time.Second {
		t.Errorf("Retry-After 2 = %v, %v", d, ok)
	}
	if _, ok := p.wait(1, "11", 10*time.Second); ok {
		t.Errorf("Retry-After 11 fits a 10 s budget")
	}
	if _, ok := p.wait(2, "", 100*time.Millisecond); ok {
		t.Errorf("backoff of attempt 2 fits 100 ms")
	}
	date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	if d, ok := p.wait(1, date, 10*time.Second); !ok || d <= time.Second || d > 3*time.Second {
		t.Errorf("Retry-After date = %v, %v", d, ok)
	}
}

func TestConfigHidesKey(t *testing.T) {
	cfg := Config{BaseURL: "https://api.openai.com/v1", APIKey: "sk-hide-me-please", Model: "m"}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "cfg", cfg)
	out := buf.String() + fmt.Sprint(cfg) + fmt.Sprintf("%+v %v", cfg, &cfg)
	if strings.Contains(out, "hide-me") || !strings.Contains(out, `"api_key_set":true`) {
		t.Errorf("output leaks or lacks the key state: %s", out)
	}
}

// errDetail is the upstream detail of a model_error (its second line).
func errDetail(err error) string {
	_, d := agent.ErrorSummary(err.Error())
	return d
}

func TestModelErrorSaysWhatToDo(t *testing.T) {
	// A port that was just free: connecting is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	tests := []struct {
		name  string
		reply llmtest.Reply
		url   string
		want  string
	}{
		{name: "unreachable", url: refused, want: "The model endpoint is unreachable. Check OPENAI_BASE_URL and that the model server is running."},
		{name: "key refused", reply: llmtest.Reply{Status: 401}, want: "The model endpoint refused the API key. Check OPENAI_API_KEY."},
		{name: "overloaded", reply: llmtest.Reply{Status: 429}, want: "The model is overloaded or rate-limited. Wait a moment and retry."},
		{name: "unknown model", reply: llmtest.Reply{Status: 404}, want: "The model endpoint does not know this model or address. Check OPENAI_MODEL and OPENAI_BASE_URL."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if url == "" {
				var fake *llmtest.Server
				fake, url = llmtest.NewHTTPServer(t)
				for range 5 {
					fake.Enqueue(tt.reply)
				}
			}
			_, err := newModel(t, url).Chat(t.Context(), userText("x"), func(agent.Delta) error { return nil })
			if agent.ErrorCode(err) != agent.CodeModelError {
				t.Fatalf("err = %v, want a model_error", err)
			}
			got, detail := agent.ErrorSummary(err.Error())
			if got != tt.want || !strings.HasPrefix(detail, "model: ") {
				t.Errorf("summary, detail = %q, %q; want %q and the upstream detail", got, detail, tt.want)
			}
		})
	}
}
