package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentik/agentik/internal/agent"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		in        string
		wantPlain string
		want      string
		wantErr   bool
	}{
		{in: "hello  world", wantPlain: "hello world", want: "[]"},
		{in: "hi [[tokens=3]] there", wantPlain: "hi there", want: "[[{tokens 3}]]"},
		{in: "[[delay=20ms]][[reasoning]]", want: "[[{delay 20ms}] [{reasoning }]]"},
		{in: `[[tool=fs__read args={"path": "a ]] b", "n": [[1]]}]] go`, wantPlain: "go",
			want: `[[{tool fs__read} {args {"path": "a ]] b", "n": [[1]]}}]]`},
		{in: "[[text=<img src=x onerror=alert(1)>]]", want: "[[{text <img src=x onerror=alert(1)>}]]"},
		{in: "[[error=500 cut]]", want: "[[{error 500} {cut }]]"},
		{in: "[[tokens=3", wantErr: true},
		{in: "[[=3]]", wantErr: true},
		{in: "[[tool=x args={oops}]]", wantErr: true},
	}
	for _, tt := range tests {
		plain, groups, err := parseDirectives(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseDirectives(%q) succeeded", tt.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseDirectives(%q): %v", tt.in, err)
			continue
		}
		if got := fmt.Sprint(groups); plain != tt.wantPlain || got != tt.want {
			t.Errorf("parseDirectives(%q) = %q, %s; want %q, %s", tt.in, plain, got, tt.wantPlain, tt.want)
		}
	}
}

func user(text string) Message { return Message{Role: "user", Content: text} }

func TestDerive(t *testing.T) {
	tests := []struct {
		name string
		msgs []Message
		want Reply
	}{
		{"echo", []Message{{Role: "system", Content: "s"}, user("[[tokens=1]] old"), {Role: "assistant", Content: "t1"}, user("hello")},
			Reply{Text: "You said: hello"}},
		{"tokens", []Message{user("[[tokens=4]]")}, Reply{Text: "t1 t2 t3 t4"}},
		{"text wins over echo", []Message{user("x [[text=<b>hi</b>]]")}, Reply{Text: "<b>hi</b>"}},
		{"system prompt", []Message{{Role: "system", Content: "you are a researcher"}, user("who? [[system]]")}, Reply{Text: "you are a researcher"}},
		{"reasoning field and chunk", []Message{user("why [[reasoning=think chunk=2]]")},
			Reply{Text: "You said: why", Reasoning: "Thinking about: why", ReasoningField: "think", ChunkSize: 2}},
		{"error", []Message{user("[[error=429]]")}, Reply{Status: 429, ErrorMessage: "llmtest: error 429 as asked", Text: "OK."}},
		{"unknown directive", []Message{user("[[frobnicate]]")}, Reply{Status: 400, ErrorMessage: "llmtest: bad directive [[frobnicate]]"}},
		{"bad error code", []Message{user("[[error=200]]")}, Reply{Status: 400, ErrorMessage: "llmtest: bad directive [[error=200]]"}},
		{"tool round one", []Message{user(`[[tool=a args={"x":1}]] [[tool=b]]`)},
			Reply{ToolCalls: []agent.ToolCall{{Name: "a", Arguments: `{"x":1}`}, {Name: "b", Arguments: "{}"}}}},
		{"tool round two, one result missing", []Message{
			user(`[[tool=a]] [[tool=b]]`),
			{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "a"}, {ID: "c2", Name: "b"}}},
			{Role: "tool", ToolCallID: "c1", Content: "A!"},
		}, Reply{ToolCalls: []agent.ToolCall{{Name: "b", Arguments: "{}"}}}},
		{"tool round two", []Message{
			user(`[[tool=a]] [[tool=b]]`),
			{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c1", Name: "a"}, {ID: "c2", Name: "b"}}},
			{Role: "tool", ToolCallID: "c2", Content: "B!"},
			{Role: "tool", ToolCallID: "c1", Content: "A!"},
		}, Reply{Text: "tool said: A!\ntool said: B!"}},
		{"cut halfway", []Message{user("[[tokens=10 cut]]")}, Reply{Text: "t1 t2 t3 t4 t5 t6 t7 t8 t9 t10", CutAfter: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := derive(Request{Messages: tt.msgs})
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("derive = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		size int
		want []string
	}{
		{"You said: hi", 0, []string{"You", " said:", " hi"}},
		{"  lead  two ", 0, []string{"  lead", "  two", " "}},
		{"héllo", 2, []string{"hé", "ll", "o"}},
		{"", 0, nil},
	}
	for _, tt := range tests {
		if got := split(tt.in, tt.size); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tt.in, tt.size, got, tt.want)
		}
	}
}

// post sends a chat request and returns the response.
func post(t *testing.T, url string, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestStreamWire(t *testing.T) {
	fake, url := NewHTTPServer(t)
	fake.Enqueue(Reply{Reasoning: "r", Text: "a b", ToolCalls: []agent.ToolCall{{Name: "t", Arguments: "{}"}}})
	resp := post(t, url, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.StatusCode != 200 {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, line)
		} else if sc.Text() != "" {
			t.Errorf("unexpected line %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read: %v", err)
	}
	want := []string{
		`{"role":"assistant"}`,
		`{"reasoning_content":"r"}`,
		`{"content":"a"}`,
		`{"content":" b"}`,
		`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"t","arguments":"{}"}}]}`,
		`{} tool_calls`,
		`usage {"prompt_tokens":2,"completion_tokens":4,"total_tokens":6}`,
		`[DONE]`,
	}
	var got []string
	for _, d := range data {
		if d == "[DONE]" {
			got = append(got, d)
			continue
		}
		var c struct {
			Model   string `json:"model"`
			Object  string `json:"object"`
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		if c.Model != "m" || c.Object != "chat.completion.chunk" {
			t.Errorf("chunk model %q object %q", c.Model, c.Object)
		}
		switch {
		case c.Usage != nil:
			got = append(got, "usage "+string(c.Usage))
		case c.Choices[0].FinishReason != nil:
			got = append(got, string(c.Choices[0].Delta)+" "+*c.Choices[0].FinishReason)
		default:
			got = append(got, string(c.Choices[0].Delta))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNoUsageUnlessAsked(t *testing.T) {
	_, url := NewHTTPServer(t)
	resp := post(t, url, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte(`"usage"`)) || !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
		t.Errorf("body:\n%s", body)
	}
}

func TestCutAbortsConnection(t *testing.T) {
	_, url := NewHTTPServer(t)
	resp := post(t, url, `{"model":"m","stream":true,"messages":[{"role":"user","content":"[[tokens=6 cut]]"}]}`)
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read err = %v, want unexpected EOF", err)
	}
	if !bytes.Contains(body, []byte(`" t3"`)) || bytes.Contains(body, []byte(`" t4"`)) || bytes.Contains(body, []byte("[DONE]")) {
		t.Errorf("body:\n%s", body)
	}
}

func TestNonStreamAndErrors(t *testing.T) {
	fake, url := NewHTTPServer(t, WithAPIKey("k1"))
	fake.Enqueue(Reply{Status: 503, ErrorMessage: "busy", RetryAfter: 1500 * time.Millisecond})

	resp := post(t, url, `{"model":"m","messages":[]}`)
	if resp.StatusCode != 401 {
		t.Errorf("without key: status %d, want 401", resp.StatusCode)
	}
	resp = post(t, url, `{"model":"m","messages":[]}`, "Authorization", "Bearer k1")
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" || e.Error.Message != "busy" || e.Error.Type != "server_error" {
		t.Errorf("status %d Retry-After %q error %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e.Error)
	}
	resp = post(t, url, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"yo"}]}]}`, "Authorization", "Bearer k1")
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || c.Choices[0].Message.Content != "You said: yo" || c.Choices[0].FinishReason != "stop" {
		t.Errorf("completion = %+v", c)
	}
	resp = post(t, url, `{"messages": 3}`, "Authorization", "Bearer k1")
	if resp.StatusCode != 400 {
		t.Errorf("malformed body: status %d, want 400", resp.StatusCode)
	}
	if got := len(fake.Requests()); got != 2 {
		t.Errorf("%d requests recorded, want 2 (unauthorized and malformed ones are not)", got)
	}
}

func TestConcurrentRequests(t *testing.T) {
	fake, url := NewHTTPServer(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			resp := post(t, url, fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"n%d [[tokens=50]]"}]}`, i))
			body, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Contains(body, []byte(`"content":" t50"`)) {
				t.Errorf("request %d: %v\n%s", i, err, body)
			}
		})
	}
	wg.Wait()
	if got := len(fake.Requests()); got != 20 {
		t.Errorf("%d requests, want 20", got)
	}
}

// TestHoldAfterStopsMidAnswer: with HoldAfter, the first chunks stream and
// the rest waits for the Hold.
func TestHoldAfterStopsMidAnswer(t *testing.T) {
	fake, url := NewHTTPServer(t)
	hold := make(chan struct{})
	fake.Enqueue(Reply{Text: "a b c d", Hold: hold, HoldAfter: 2})
	resp := post(t, url, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	chunks := make(chan string, 16)
	go func() {
		defer close(chunks)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var c wireChunk
				if json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) == 1 && c.Choices[0].Delta.Content != "" {
					chunks <- c.Choices[0].Delta.Content
				}
			}
		}
	}()
	// The first two chunks come while the Hold is still open (they would
	// never come with the Hold at the start).
	if a, b := <-chunks, <-chunks; a+b != "a b" {
		t.Fatalf("before the hold: %q %q", a, b)
	}
	select {
	case c := <-chunks:
		t.Fatalf("chunk %q streamed past the hold", c)
	default:
	}
	close(hold)
	var rest string
	for c := range chunks {
		rest += c
	}
	if rest != " c d" {
		t.Fatalf("after the hold: %q", rest)
	}
}
