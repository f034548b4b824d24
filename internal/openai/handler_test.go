package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/openai"
	"github.com/agentik/agentik/internal/protocol"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/testwait"
)

// testServer is agentik's server as app.Wire builds it for app.Run
// (cmd/agentik), over SQLite, with the fake model over HTTP as the model
// the environment names: the /v1 facade is the Handler the server mounts,
// so a wiring bug in Run fails these tests too.
type testServer struct {
	*httptest.Server
	Fake   *llmtest.Server
	Runner *agent.Runner
	Broker *broker.Broker
}

// rig is what a test may set before the server starts.
type rig struct {
	tools     agent.Tools   // in place of an mcp.json's tools (app.Hooks.Tools)
	heartbeat time.Duration // the SSE heartbeat; a second unless set
	fake      []llmtest.Option
}

type rigOption func(*rig)

// strict makes the fake model refuse broken tool pairing, as OpenAI does.
func strict() rigOption {
	return func(r *rig) { r.fake = append(r.fake, llmtest.WithStrictToolPairs()) }
}

func newTestServer(t testing.TB, opts ...rigOption) *testServer {
	t.Helper()
	g := rig{heartbeat: time.Second}
	for _, o := range opts {
		o(&g)
	}
	fake, url := llmtest.NewHTTPServer(t, append([]llmtest.Option{llmtest.WithModels("fake")}, g.fake...)...)
	env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn}
	w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{
		Tools:     g.tools,
		Configure: func(_ *agent.Config, scfg *server.Config) { scfg.Heartbeat = g.heartbeat },
	})
	if err != nil {
		t.Fatal(err)
	}
	a := w.App
	ts := httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx, func(context.Context) error { ts.Close(); return nil }); err != nil {
			t.Error(err)
		}
	})
	return &testServer{Server: ts, Fake: fake, Runner: a.Runner, Broker: a.Broker}
}

func (f *testServer) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
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

func TestModelRetrieve(t *testing.T) {
	f := newTestServer(t, strict())
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
	// The stream starts after one heartbeat without a token: a heartbeat
	// that cannot pass first, so a loaded machine's slow error is still
	// before the stream.
	f := newTestServer(t, strict(), func(g *rig) { g.heartbeat = testwait.Timeout })
	conv, err := f.Runner.Create(context.Background(), agent.NewConversation{Title: "stored"})
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
	f := newTestServer(t, strict())
	conv, err := f.Runner.Create(context.Background(), agent.NewConversation{Title: "stored"})
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
	if answers[0] != "You said: only once" || answers[1] != answers[0] || len(f.Fake.Requests()) != 1 {
		t.Fatalf("answers %q after %d model calls", answers, len(f.Fake.Requests()))
	}
	resp, _ := f.do(t, "POST", "/v1/chat/completions", body, protocol.ConversationHeader, conv.ID, openai.IdempotencyHeader, strings.Repeat("k", 201))
	if resp.StatusCode != 400 {
		t.Fatalf("a 201-byte key: %d", resp.StatusCode)
	}
}

// turnEnds subscribes to id's live events; the returned wait blocks until
// the conversation's next end event (failing the test after 10 s).
func turnEnds(t *testing.T, ts *testServer, id string) (wait func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	sub, err := ts.Broker.Subscribe(ctx, broker.Stream{Kind: broker.StreamConversation, ConversationID: id}, -1, "")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		defer cancel()
		defer sub.Close()
		for {
			it, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for the turn's end: %v", err)
			}
			if it.CaughtUp {
				continue
			}
			if ev, err := it.Event.Decode(); err == nil && ev.Event != nil && ev.Event.Type == agent.EventEnd {
				return
			}
		}
	}
}

// TestRetryOfAFailedTurnWithoutAKey: a client that retries on its own
// (LangChain's caller, the AI SDK's), with neither an Idempotency-Key nor
// a retry count, sends the same user message again after a failed turn:
// the failed turn is answered again (a regenerate), not a second copy of
// the message stored. Once a turn succeeded, the same text is a new
// message.
func TestRetryOfAFailedTurnWithoutAKey(t *testing.T) {
	f := newTestServer(t, strict())
	conv, err := f.Runner.Create(context.Background(), agent.NewConversation{Title: "stored"})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"fake","messages":[{"role":"user","content":"try me"}]}`
	f.Fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "the model refused"})
	if resp, b := f.do(t, "POST", "/v1/chat/completions", body, protocol.ConversationHeader, conv.ID); resp.StatusCode < 400 {
		t.Fatalf("the failed first attempt: %d %s", resp.StatusCode, b)
	}
	users := func() int {
		ms, err := f.Runner.Messages(context.Background(), agent.MessageQuery{ConversationID: conv.ID, Limit: agent.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range ms {
			if m.Type == agent.MessageUser {
				n++
			}
		}
		return n
	}
	for i, want := range []int{1, 2} {
		resp, b := f.do(t, "POST", "/v1/chat/completions", body, protocol.ConversationHeader, conv.ID)
		if resp.StatusCode != 200 || !strings.Contains(string(b), "You said: try me") {
			t.Fatalf("attempt %d: %d %s", i+2, resp.StatusCode, b)
		}
		if got := users(); got != want {
			t.Errorf("after attempt %d the conversation holds %d user messages, want %d", i+2, got, want)
		}
	}
}

// TestRetryOfAFailedResponse: the AI SDK's streamText with
// previousResponseId retries a failed request as it was: the failed turn
// is answered again, not a failed branch stored per attempt.
func TestRetryOfAFailedResponse(t *testing.T) {
	f := newTestServer(t, strict())
	var first struct {
		ID           string
		Conversation struct{ ID string }
	}
	resp, b := f.do(t, "POST", "/v1/responses", `{"model":"fake","input":"first"}`, "Content-Type", "application/json")
	if err := json.Unmarshal(b, &first); resp.StatusCode != 200 || err != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	body := `{"model":"fake","input":"again","previous_response_id":"` + first.ID + `"}`
	f.Fake.Enqueue(llmtest.Reply{Status: 400, ErrorMessage: "the model refused"})
	var got struct {
		Status     string
		OutputText string `json:"output_text"`
	}
	_, b = f.do(t, "POST", "/v1/responses", body, "Content-Type", "application/json")
	if err := json.Unmarshal(b, &got); err != nil || got.Status != "failed" {
		t.Fatalf("the first attempt: %s", b)
	}
	_, b = f.do(t, "POST", "/v1/responses", body, "Content-Type", "application/json")
	if err := json.Unmarshal(b, &got); err != nil || got.Status != "completed" || got.OutputText != "You said: again" {
		t.Fatalf("the retry: %s", b)
	}
	// Every branch's user messages: one "again", the failed answer and
	// the new one its siblings.
	ms, err := f.Runner.Messages(context.Background(), agent.MessageQuery{ConversationID: first.Conversation.ID, Limit: agent.MaxPageSize, All: true})
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range ms {
		if m.Type == agent.MessageUser {
			users = append(users, m.Content[0].Body)
		}
	}
	if strings.Join(users, ",") != "first,again" {
		t.Errorf("the conversation's user messages (every branch) %q, want first,again", users)
	}
}
