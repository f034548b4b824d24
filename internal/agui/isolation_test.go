package agui_test

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
	"github.com/agentik/agentik/internal/agui"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// rig is the AI SDK handler over a real runner, store and broker, with the
// caller named by the X-Test-User header (as the server's middleware puts
// a principal in the context).
func rig(t *testing.T) (*httptest.Server, *agent.Runner) {
	t.Helper()
	_, url := llmtest.NewHTTPServer(t)
	a, err := app.Open(context.Background(), app.Config{DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.New(llm.Config{BaseURL: url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), agent.Config{Model: m}, server.Config{ModelName: "fake", Heartbeat: time.Second}); err != nil {
		t.Fatal(err)
	}
	h := agui.New(agui.Config{Runner: a.Runner, Broker: a.Broker, Heartbeat: time.Second})
	mux := http.NewServeMux()
	for p, hh := range h.Routes() {
		mux.Handle(p, hh)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := agent.Principal{UserID: r.Header.Get("X-Test-User"), Role: agent.RoleMember}
		mux.ServeHTTP(w, r.WithContext(agent.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Runner.Close(ctx)
		_ = a.Server.Shutdown(ctx)
		ts.Close()
		_ = a.Close(ctx)
	})
	return ts, a.Runner
}

func run(t *testing.T, ts *httptest.Server, user, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+agui.Path, strings.NewReader(body))
	req.Header.Set("X-Test-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestOthersThread: a threadId that is another user's conversation is a
// RUN_ERROR not_found for every kind of run, as an unknown id is, and
// changes nothing.
func TestOthersThread(t *testing.T) {
	ts, runner := rig(t)
	if body := run(t, ts, "alice", `{"threadId":"thread-iso","runId":"r1","messages":[{"id":"u1","role":"user","content":"mine"}]}`); !strings.Contains(body, `"type":"RUN_FINISHED"`) {
		t.Fatalf("alice's run: %s", body)
	}
	for name, req := range map[string]string{
		"message": `{"threadId":"thread-iso","runId":"r2","messages":[{"id":"u2","role":"user","content":"theirs"}]}`,
		"attach":  `{"threadId":"thread-iso","runId":"r3","messages":[]}`,
		"resume":  `{"threadId":"thread-iso","runId":"r4","messages":[],"resume":[{"interruptId":"c1","status":"cancelled"}]}`,
	} {
		body := run(t, ts, "bob", req)
		var ev struct{ Type, Code string }
		line, _ := strings.CutPrefix(strings.TrimSpace(body), "data: ")
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "RUN_ERROR" || ev.Code != agent.CodeNotFound {
			t.Errorf("bob's %s run on alice's thread: %s", name, body)
		}
	}
	ctx := agent.WithPrincipal(context.Background(), agent.Principal{UserID: "alice", Role: agent.RoleMember})
	ms, err := runner.Messages(ctx, agent.MessageQuery{ConversationID: "thread-iso", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Errorf("alice's thread holds %d messages after bob's tries, want her 2", len(ms))
	}
}
