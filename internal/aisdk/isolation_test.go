package aisdk_test

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
	"github.com/agentik/agentik/internal/aisdk"
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
	h := aisdk.New(aisdk.Config{Runner: a.Runner, Broker: a.Broker, Heartbeat: time.Second})
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

func post(t *testing.T, ts *httptest.Server, user, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/agentik/ai-sdk/chat", strings.NewReader(body))
	req.Header.Set("X-Test-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOthersChat: a chat id that is another user's conversation answers
// not_found on every route, as an unknown id does, and changes nothing.
func TestOthersChat(t *testing.T) {
	ts, runner := rig(t)
	st, body := post(t, ts, "alice", `{"id":"chat-iso","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"mine"}]}]}`)
	if st != 200 || !strings.Contains(body, `"type":"finish"`) {
		t.Fatalf("alice's chat: %d %s", st, body)
	}
	for name, req := range map[string]string{
		"submit":     `{"id":"chat-iso","trigger":"submit-message","messages":[{"id":"u2","role":"user","parts":[{"type":"text","text":"theirs"}]}]}`,
		"regenerate": `{"id":"chat-iso","trigger":"regenerate-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"mine"}]}]}`,
	} {
		st, body := post(t, ts, "bob", req)
		var e agent.Error
		if st != http.StatusNotFound || json.Unmarshal([]byte(body), &e) != nil || e.Code != agent.CodeNotFound {
			t.Errorf("bob's %s on alice's chat: %d %s", name, st, body)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/agentik/ai-sdk/chat/chat-iso/stream", nil)
	req.Header.Set("X-Test-User", "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("bob's resume of alice's chat: %d, want 204 as for a chat of his own where nothing runs", resp.StatusCode)
	}
	ctx := agent.WithPrincipal(context.Background(), agent.Principal{UserID: "alice", Role: agent.RoleMember})
	ms, err := runner.Messages(ctx, agent.MessageQuery{ConversationID: "chat-iso", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Errorf("alice's chat holds %d messages after bob's tries, want her 2", len(ms))
	}
}
