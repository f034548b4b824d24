package agui_test

import (
	"context"
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
	"github.com/agentik/agentik/internal/agui"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// rig is agentik's server as app.Wire builds it for app.Run (cmd/agentik)
// over SQLite and the fake model, with the caller named by the X-Test-User
// header, as a trusted reverse proxy names them (AGENTIK_TRUSTED_USER_HEADER
// from loopback): the handler is the one the server mounts, and each
// name signs in as a member. user is the principal a name signed in as.
func rig(t *testing.T) (ts *httptest.Server, convs *agent.Conversations, user func(name string) agent.Principal) {
	t.Helper()
	_, url := llmtest.NewHTTPServer(t, llmtest.WithModels("fake"))
	env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn,
		TrustedUserHeader: "X-Test-User", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{
		Configure: func(_ *agent.Config, scfg *server.Config) { scfg.Heartbeat = time.Second },
	})
	if err != nil {
		t.Fatal(err)
	}
	a := w.App
	ts = httptest.NewServer(a.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx, func(context.Context) error { ts.Close(); return nil })
	})
	user = func(name string) agent.Principal {
		t.Helper()
		u, err := a.Store.UserBySubject(context.Background(), "header:X-Test-User", name)
		if err != nil {
			t.Fatalf("user %s: %v", name, err)
		}
		return u.Principal()
	}
	return ts, a.Conversations, user
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
	ts, convs, user := rig(t)
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
	alice := user("alice")
	if alice.Role != agent.RoleMember {
		t.Errorf("alice signed in as %+v, want a member", alice)
	}
	ctx := agent.WithPrincipal(context.Background(), alice)
	ms, err := convs.Messages(ctx, agent.MessageQuery{ConversationID: "thread-iso", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Errorf("alice's thread holds %d messages after bob's tries, want her 2", len(ms))
	}
}
