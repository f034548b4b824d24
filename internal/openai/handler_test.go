package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/openai"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
)

// facade is the openai Handler alone over a real runner and broker (no
// server middleware), the fake model strict about tool pairing.
type facade struct {
	*httptest.Server
	fake   *llmtest.Server
	runner *agent.Runner
}

func newFacade(t *testing.T) *facade {
	t.Helper()
	fake, url := llmtest.NewHTTPServer(t, llmtest.WithStrictToolPairs())
	a, err := app.Open(context.Background(), app.Config{DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.New(llm.Config{BaseURL: url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), agent.Config{Model: m}, server.Config{ModelName: "fake"}); err != nil {
		t.Fatal(err)
	}
	h := openai.New(openai.Config{Runner: a.Runner, Broker: a.Broker, ModelName: "fake", Heartbeat: time.Minute})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts.Close()
		_ = a.Runner.Close(ctx)
		_ = a.Close(ctx)
	})
	return &facade{Server: ts, fake: fake, runner: a.Runner}
}

func (f *facade) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.URL+path, strings.NewReader(body))
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
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get(openai.RequestIDHeader); !strings.HasPrefix(id, "req_") {
		t.Errorf("%s %s: x-request-id %q", method, path, id)
	}
	return resp, b
}

type oaiError struct {
	Error struct {
		Message, Type, Code string
		Param               *string
	}
}

func TestModelRetrieve(t *testing.T) {
	f := newFacade(t)
	resp, b := f.do(t, "GET", "/v1/models/fake", "")
	var m struct{ ID, Object string }
	if err := json.Unmarshal(b, &m); resp.StatusCode != 200 || err != nil || m.ID != "fake" || m.Object != "model" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b = f.do(t, "GET", "/v1/models/other/model", "")
	var e oaiError
	if err := json.Unmarshal(b, &e); resp.StatusCode != 404 || err != nil || e.Error.Code != "model_not_found" || e.Error.Param == nil || *e.Error.Param != "model" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if resp, _ := f.do(t, "GET", "/v1/nothing", ""); resp.StatusCode != 404 {
		t.Fatalf("no route: %d", resp.StatusCode)
	}
}

// TestFailureBeforeFirstToken: a stream whose model fails before its first
// token is the error's HTTP status in OpenAI's shape, not a 200 stream;
// on a stored conversation it says not to retry, a stateless one may be.
func TestFailureBeforeFirstToken(t *testing.T) {
	f := newFacade(t)
	conv, err := f.runner.CreateConversation(context.Background(), "stored", false)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"fake","stream":true,"messages":[{"role":"user","content":"[[error=400]] no"}]}`
	for _, tc := range []struct {
		name, conversation, shouldRetry string
	}{{"stateless", "", ""}, {"stored", conv.ID, "false"}} {
		var h []string
		if tc.conversation != "" {
			h = []string{protocol.ConversationHeader, tc.conversation}
		}
		resp, b := f.do(t, "POST", "/v1/chat/completions", body, h...)
		var e oaiError
		if err := json.Unmarshal(b, &e); resp.StatusCode != http.StatusBadGateway || err != nil || e.Error.Type != "server_error" || e.Error.Code != agent.CodeModelError {
			t.Errorf("%s: %d %s %q", tc.name, resp.StatusCode, b, resp.Header.Get("Content-Type"))
		}
		if got := resp.Header.Get(openai.ShouldRetryHeader); got != tc.shouldRetry {
			t.Errorf("%s: x-should-retry %q, want %q", tc.name, got, tc.shouldRetry)
		}
	}
}

// TestIdempotencyKey: a request sent again with the same Idempotency-Key
// is answered by the first one's turn; the model is asked once.
func TestIdempotencyKey(t *testing.T) {
	f := newFacade(t)
	conv, err := f.runner.CreateConversation(context.Background(), "stored", false)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"fake","messages":[{"role":"user","content":"only once"}]}`
	var answers []string
	for range 2 {
		resp, b := f.do(t, "POST", "/v1/chat/completions", body, protocol.ConversationHeader, conv.ID, openai.IdempotencyHeader, "k1")
		var c struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal(b, &c); resp.StatusCode != 200 || err != nil || len(c.Choices) != 1 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		answers = append(answers, c.Choices[0].Message.Content)
	}
	if answers[0] != "You said: only once" || answers[1] != answers[0] || len(f.fake.Requests()) != 1 {
		t.Fatalf("answers %q after %d model calls", answers, len(f.fake.Requests()))
	}
	resp, _ := f.do(t, "POST", "/v1/chat/completions", body, protocol.ConversationHeader, conv.ID, openai.IdempotencyHeader, strings.Repeat("k", 201))
	if resp.StatusCode != 400 {
		t.Fatalf("a 201-byte key: %d", resp.StatusCode)
	}
}
