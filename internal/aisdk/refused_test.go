package aisdk_test

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
	"github.com/agentik/agentik/internal/aisdk"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// refusedRig is agentik as app.Wire builds it, every caller the local
// user, with a budget of 10 tokens a day; model says whether a model is
// configured. spend uses the budget up.
func refusedRig(t *testing.T, model bool) (ts *httptest.Server, w *app.Wired, spend func()) {
	t.Helper()
	env := map[string]string{}
	if model {
		_, url := llmtest.NewHTTPServer(t, llmtest.WithModels("fake"))
		env = map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	}
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn,
		DefaultBudget: agent.Budget{Tokens: 10, Period: "day"}}
	w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ts = httptest.NewServer(w.App.Server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx, func(context.Context) error { ts.Close(); return nil })
	})
	spend = func() {
		if err := w.App.Store.AddUsage(context.Background(), agent.LocalUser, time.Now().UTC().Format(agent.DateFormat), 10, 0); err != nil {
			t.Fatal(err)
		}
	}
	return ts, w, spend
}

// leftNothing fails t when a conversation exists, stored or temp, or the
// log holds a created event.
func leftNothing(t *testing.T, w *app.Wired, when string) {
	t.Helper()
	ctx := context.Background()
	cs, total, err := w.App.Runner.Conversations(ctx, 0, 10)
	if err != nil || total != 0 {
		t.Errorf("%s: conversations %+v (%v), want none", when, cs, err)
	}
	evs, err := w.App.Store.EncodedEvents(ctx, agent.EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if ev, err := e.Decode(); err == nil && ev.Agent != nil && ev.Agent.Type == agent.AgentCreated {
			t.Errorf("%s: the log holds %s", when, e.JSON)
		}
	}
}

// TestRefusedFirstMessageLeavesNothing: the first message of a chat id
// refused (no model configured, the budget used up) is the protocol's
// error, and no conversation of that id, nor its created event, is left.
func TestRefusedFirstMessageLeavesNothing(t *testing.T) {
	t.Parallel()
	const body = `{"id":"chat-new","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hello"}]}]}`
	for _, tc := range []struct {
		name  string
		model bool
		code  string
	}{
		{"no model", false, agent.CodeUnavailable},
		{"over the budget", true, agent.CodeQuotaExceeded},
	} {
		ts, w, spend := refusedRig(t, tc.model)
		if tc.model {
			spend()
		}
		req, _ := http.NewRequest("POST", ts.URL+aisdk.Prefix+"chat", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e agent.Error
		if resp.StatusCode < 400 || json.Unmarshal(b, &e) != nil || e.Code != tc.code {
			t.Errorf("%s: %d %s, want %s", tc.name, resp.StatusCode, b, tc.code)
		}
		leftNothing(t, w, tc.name)
	}
}
