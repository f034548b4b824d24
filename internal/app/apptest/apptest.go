// Package apptest is agentik as app.Wire builds it, for the protocol
// packages' tests of what a refused request leaves behind. Linked by
// tests only.
package apptest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

// Refused is agentik as app.Wire builds it, every caller the local
// user, with a budget of 10 tokens a day; model says whether a model is
// configured. spend uses the budget up.
func Refused(t *testing.T, model bool) (ts *httptest.Server, w *app.Wired, spend func()) {
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

// LeftNothing fails t when a conversation exists, stored or temp, or the
// log holds a created event.
func LeftNothing(t *testing.T, w *app.Wired, when string) {
	t.Helper()
	ctx := context.Background()
	cs, total, err := w.App.Conversations.List(ctx, 0, 10)
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
