package server_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/llm/llmtest"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
)

// testServer is the whole server over a real SQLite file and the fake model
// over HTTP, served by httptest.
type testServer struct {
	*httptest.Server
	Fake   *llmtest.Server
	Store  *store.Store
	Broker *broker.Broker
	Runner *agent.Runner
	App    *server.Server
}

type rigOption func(*agent.Config, *server.Config)

// withoutModel starts the server with no model configured.
func withoutModel() rigOption {
	return func(a *agent.Config, _ *server.Config) { a.Model = nil }
}

func newTestServer(t testing.TB, opts ...rigOption) *testServer {
	t.Helper()
	fake, url := llmtest.NewHTTPServer(t)
	var b *broker.Broker
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "agentik.db"),
		store.Options{Publish: func(evs []agent.AllEvent) { b.Publish(evs...) }})
	if err != nil {
		t.Fatal(err)
	}
	b = broker.New(st, nil)
	m, err := llm.New(llm.Config{BaseURL: url, Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	acfg := agent.Config{Store: st, Cluster: st, Publisher: b, Model: m}
	scfg := server.Config{Broker: b, Store: st, ModelName: "fake", Heartbeat: time.Second}
	for _, o := range opts {
		o(&acfg, &scfg)
	}
	r := agent.NewRunner(acfg)
	scfg.Runner = r
	app := server.New(scfg)
	hs := httptest.NewServer(app)
	ts := &testServer{Server: hs, Fake: fake, Store: st, Broker: b, Runner: r, App: app}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := app.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		hs.Close()
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

// withKeys requires API keys.
func withKeys(keys ...string) rigOption {
	return func(_ *agent.Config, s *server.Config) { s.APIKeys = keys }
}
