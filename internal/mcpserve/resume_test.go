package mcpserve_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/testwait"
)

// TestResumeIsOwnersOnly: a reconnect that resumes a call (GET /mcp with
// the resume token of a progress notification as its Last-Event-ID) on
// agentik's server as app.Wire builds it: the conversation's owner gets
// the call's result (the turn's whole answer, from any process, with no
// session), another user the "no conversation" result of an unknown one;
// an id that is not a resume token is a stream that ends at once, empty
// (the client fails the call instead of waiting).
func TestResumeIsOwnersOnly(t *testing.T) {
	_, url := llmtest.NewHTTPServer(t, llmtest.WithModels("fake"))
	env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn,
		TrustedUserHeader: "X-Test-User", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(w.App.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx, func(context.Context) error { ts.Close(); return nil })
	})
	get := func(user, lastEventID string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+"/mcp", nil)
		req.Header.Set("X-Test-User", user)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastEventID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get("alice", "1") // signs alice in
	u, err := w.App.Store.UserBySubject(context.Background(), "header:X-Test-User", "alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx := agent.WithPrincipal(context.Background(), u.Principal())
	c, err := w.App.Runner.Create(ctx, agent.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.App.Runner.Start(ctx, agent.StartInput{ConversationID: c.ID, Content: []agent.Content{agent.Text("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the turn to end", func() bool { c, err := w.App.Runner.Conversation(ctx, c.ID); return err == nil && !c.Running })
	b, _ := json.Marshal(map[string]any{"c": c.ID, "t": res.Seq, "s": 0, "p": 7, "i": 7})
	token := "agentik-call." + base64.RawURLEncoding.EncodeToString(b)

	st, body := get("alice", token)
	if st != http.StatusOK || !strings.Contains(body, `"id":7`) || !strings.Contains(body, "You said: hello") || !strings.Contains(body, `"progressToken":7`) {
		t.Errorf("alice's resume of her call: %d %s", st, body)
	}
	st, body = get("bob", token)
	if st != http.StatusOK || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, `no conversation \"`+c.ID) || strings.Contains(body, "You said") {
		t.Errorf("bob's resume of alice's call: %d %s", st, body)
	}
	if st, body := get("alice", "42"); st != http.StatusOK || body != "" {
		t.Errorf("a GET with an id that is no resume token: %d %q, want a stream that ends at once, empty", st, body)
	}
}
