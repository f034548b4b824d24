package aisdk_test

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
	"github.com/agentik/agentik/internal/aisdk"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
)

// rig is agentik's server as app.Wire builds it for app.Run (cmd/agentik)
// over SQLite and the fake model, with the caller named by the X-Test-User
// header, as a trusted reverse proxy names them (AGENTIK_TRUSTED_USER_HEADER
// from loopback): the handler is the one the server mounts, and each
// name signs in as a member. user is the principal a name signed in as.
func rig(t *testing.T) (ts *httptest.Server, w *app.Wired, user func(name string) agent.Principal) {
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
	return ts, w, user
}

func post(t *testing.T, ts *httptest.Server, user, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+aisdk.Prefix+"chat", strings.NewReader(body))
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
	ts, w, user := rig(t)
	convs := w.Conversations
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
	req, _ := http.NewRequest("GET", ts.URL+aisdk.Prefix+"chat/chat-iso/stream", nil)
	req.Header.Set("X-Test-User", "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("bob's resume of alice's chat: %d, want 204 as for a chat of his own where nothing runs", resp.StatusCode)
	}
	alice := user("alice")
	if alice.Role != agent.RoleMember {
		t.Errorf("alice signed in as %+v, want a member", alice)
	}
	ctx := agent.WithPrincipal(context.Background(), alice)
	ms, err := convs.Messages(ctx, agent.MessageQuery{ConversationID: "chat-iso", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Errorf("alice's chat holds %d messages after bob's tries, want her 2", len(ms))
	}
}

// TestResumeFailedTurn: GET …/stream of a chat whose last turn failed
// streams that turn again to its error chunk; once its events are
// pruned, its end alone (the error, the finish), never a silent 204 nor
// an error of the request.
func TestResumeFailedTurn(t *testing.T) {
	ts, w, _ := rig(t)
	st, body := post(t, ts, "alice", `{"id":"chat-failed","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"[[error=400]]"}]}]}`)
	if st != 200 || !strings.Contains(body, `"type":"error"`) {
		t.Fatalf("the failing chat: %d %s", st, body)
	}
	resume := func() (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+aisdk.Prefix+"chat/chat-failed/stream", nil)
		req.Header.Set("X-Test-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	types := func(body string) string {
		var out []string
		for _, line := range strings.Split(body, "\n") {
			var c struct{ Type string }
			if d, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(d), &c) == nil {
				out = append(out, c.Type)
			}
		}
		return strings.Join(out, " ")
	}
	st, body = resume()
	if got := types(body); st != 200 || got != "start error finish" || !strings.Contains(body, "400") {
		t.Errorf("resume of the failed turn: %d %s\n%s", st, got, body)
	}
	if _, err := w.Store.Prune(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	st, body2 := resume()
	if got := types(body2); st != 200 || got != "start error finish" || body2 != body {
		t.Errorf("resume once its events are pruned: %d %s\n%s\nwant as before:\n%s", st, got, body2, body)
	}
}
