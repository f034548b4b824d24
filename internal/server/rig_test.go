package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/password"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/testwait"
)

// testServer is the whole server over a real SQLite file and the fake model
// over HTTP, served by httptest.
type testServer struct {
	*httptest.Server
	Fake   *llmtest.Server
	Store  *store.Store
	Broker *broker.Broker
	Runner *agent.Runner
	Convs  *agent.Conversations // the services app.Wire made
	Agents *agent.Agents
	Memory *agent.Memory
	App    *server.Server
	DB     string // the SQLite file
}

// testPasswordCosts are the rig's password hasher's: argon2id as in production,
// with costs a test can afford (the default's 19 MiB and two passes take
// most of a second a hash under -race on a loaded machine, and a sign-up,
// sign-in and reset each hash). internal/password tests the defaults.
var testPasswordCosts = password.Costs{Memory: 256, Time: 1}

type rigOption func(*agent.Config, *server.Config)

// withoutModel starts the server with no model configured.
func withoutModel() rigOption {
	return func(a *agent.Config, _ *server.Config) { a.Model = nil }
}

// withoutMetrics serves no /metrics (app.Run always serves them).
func withoutMetrics() rigOption {
	return func(_ *agent.Config, s *server.Config) { s.Metrics, s.Observer = nil, nil }
}

// withPageMessages makes a conversation page render the latest n messages.
func withPageMessages(n int) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.PageMessages = n }
}

// newTestServer builds the server through app.Wire, the wiring app.Run
// (cmd/agentik) serves: the model is the one the environment names (the
// fake), and the options adjust the configs Wire made, so a wiring bug in
// Run fails these tests too.
func newTestServer(t testing.TB, opts ...rigOption) *testServer {
	t.Helper()
	fake, url := llmtest.NewHTTPServer(t, llmtest.WithModels("fake"))
	// The runner's clock (withClock) is the store's too.
	var probe agent.Config
	for _, o := range opts {
		o(&probe, &server.Config{})
	}
	env := map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake"}
	db := filepath.Join(t.TempDir(), "agentik.db")
	settings := app.Settings{Addr: "127.0.0.1:0", DB: "sqlite:" + db, Titles: agent.TitlesFirstLine, LogLevel: slog.LevelWarn}
	w, err := app.Wire(context.Background(), settings, func(k string) string { return env[k] }, io.Discard, app.Hooks{
		Now: probe.Now,
		Configure: func(acfg *agent.Config, scfg *server.Config) {
			scfg.Heartbeat = time.Second
			scfg.Passwords = password.New(testPasswordCosts)
			for _, o := range opts {
				o(acfg, scfg)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := w.App
	hs := httptest.NewServer(a.Server)
	ts := &testServer{Server: hs, Fake: fake, Store: a.Store, Broker: a.Broker, Runner: a.Runner, App: a.Server, DB: db,
		Convs: a.Conversations, Agents: a.Agents, Memory: a.Memory}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		if err := w.Shutdown(ctx, func(context.Context) error { hs.Close(); return nil }); err != nil {
			t.Error(err)
		}
	})
	return ts
}

// backClock is a clock running behind the real one by a settable offset:
// conversations made while it is behind are that old.
type backClock struct{ behind atomic.Int64 }

func (c *backClock) now() time.Time { return time.Now().Add(-time.Duration(c.behind.Load())) }

// set puts the clock d behind the real time.
func (c *backClock) set(d time.Duration) { c.behind.Store(int64(d)) }

// withClock runs the server (runner and store) on c.
func withClock(c *backClock) rigOption {
	return func(a *agent.Config, _ *server.Config) { a.Now = c.now }
}

// withKeys requires API keys.
func withKeys(keys ...string) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.APIKeys = keys }
}
