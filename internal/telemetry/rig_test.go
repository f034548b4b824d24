package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/telemetry"
	"github.com/agentik/agentik/internal/testwait"
)

// fakeTools offers fs__read (answers) and fs__fail (fails), both of server "fs".
type fakeTools struct{}

func (fakeTools) Specs(context.Context) []agent.ToolSpec {
	return []agent.ToolSpec{{Name: "fs__read", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "fs__fail", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (fakeTools) Call(_ context.Context, name, _ string) (string, error) {
	if name == "fs__fail" {
		return "", errors.New("disk on fire")
	}
	return "contents", nil
}

func (fakeTools) Servers() []agent.ToolServer {
	return []agent.ToolServer{{Name: "fs", Transport: "stdio", State: agent.ToolServerReady, Tools: []string{"fs__read", "fs__fail"}}}
}

// rig is the whole server over SQLite and the fake model, observed, as
// app.Wire builds it for app.Run (cmd/agentik): the metrics, the model's
// and the tools' decorators and the tracing (from the environment) are
// Run's, so a wiring bug in Run fails these tests too.
type rig struct {
	*httptest.Server
	fake    *llmtest.Server
	store   *store.Store
	broker  *broker.Broker
	runner  *agent.Runner
	convs   *agent.Conversations
	metrics *telemetry.Metrics
	close   func() // stops it all, as Run's shutdown does; the traces are flushed
}

// newRig starts the server with the variables of env (OTEL_*: tracing)
// and fakeTools in place of an mcp.json's tools; opts adjust the runner's
// config as Wire made it.
func newRig(t *testing.T, env map[string]string, opts ...func(*agent.Config)) *rig {
	t.Helper()
	fake, url := llmtest.NewHTTPServer(t, llmtest.WithModels("fake"))
	vars := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	maps.Copy(vars, env)
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + filepath.Join(t.TempDir(), "agentik.db"), Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn}
	w, err := app.Wire(context.Background(), settings, func(k string) string { return vars[k] }, io.Discard, app.Hooks{
		Tools: fakeTools{}, ToolLister: fakeTools{},
		Configure: func(acfg *agent.Config, _ *server.Config) {
			for _, o := range opts {
				o(acfg)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := w.App
	hs := httptest.NewServer(a.Server)
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := w.Shutdown(ctx, func(context.Context) error { hs.Close(); return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(closeAll)
	return &rig{Server: hs, fake: fake, store: a.Store, broker: a.Broker, runner: a.Runner, convs: a.Conversations, metrics: w.Metrics, close: closeAll}
}

func (rg *rig) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, rg.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (rg *rig) create(t *testing.T) string {
	t.Helper()
	code, body := rg.do(t, "POST", "/agentik/conversations", `{"title":"t"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var c agent.Conversation
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// send posts a message and reads the SSE answer to its end.
func (rg *rig) send(t *testing.T, id, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": []agent.Content{agent.Text(text)}})
	code, out := rg.do(t, "POST", "/agentik/conversations/"+id+"/send", string(body))
	if code != 200 {
		t.Fatalf("send: %d %s", code, out)
	}
	return out
}

func (rg *rig) waitIdle(t *testing.T, id string) {
	t.Helper()
	testwait.For(t, "conversation "+id+" to end its turn", func() bool {
		c, err := rg.convs.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return !c.Running
	})
}
