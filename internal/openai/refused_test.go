package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestRefusedFirstRequestLeavesNothing: a chat completion without a
// conversation (stateless) and a Responses request that starts one
// (stored or not) refused (an unknown model, no model configured, the
// budget used up) are OpenAI errors, and no conversation, stored or temp,
// nor a created event, is left.
func TestRefusedFirstRequestLeavesNothing(t *testing.T) {
	t.Parallel()
	requests := map[string]string{
		"chat":              `/v1/chat/completions {"model":"%s","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"hello"}]}`,
		"chat, streamed":    `/v1/chat/completions {"model":"%s","stream":true,"messages":[{"role":"user","content":"hello"}]}`,
		"responses":         `/v1/responses {"model":"%s","input":"hello"}`,
		"responses, seeded": `/v1/responses {"model":"%s","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"hello"}]}`,
		"responses, temp":   `/v1/responses {"model":"%s","store":false,"input":"hello"}`,
	}
	for _, tc := range []struct {
		name   string
		model  string // "": none configured
		spend  bool
		status int
	}{
		{"unknown model", "nope", false, http.StatusNotFound},
		{"no model", "", false, http.StatusServiceUnavailable},
		{"over the budget", "fake", true, http.StatusTooManyRequests},
	} {
		ts, w, spend := refusedRig(t, tc.model != "")
		if tc.spend {
			spend()
		}
		for name, req := range requests {
			path, body, _ := strings.Cut(req, " ")
			model := tc.model
			if model == "" {
				model = "fake"
			}
			resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(fmt.Sprintf(body, model)))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct{ Error *struct{ Message string } }
			if resp.StatusCode != tc.status || json.Unmarshal(b, &e) != nil || e.Error == nil {
				t.Errorf("%s, %s: %d %s, want %d with an OpenAI error", tc.name, name, resp.StatusCode, b, tc.status)
			}
			leftNothing(t, w, tc.name+", "+name)
		}
	}
}
