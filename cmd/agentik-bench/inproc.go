package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/store"
)

// inproc is agentik run in this process by app.Run, the program
// cmd/agentik runs, with the settings startAgentik gives the binary, for
// -cpuprofile: every goroutine it starts carries the profile label
// side=server, so `go tool pprof -tagfocus side=server` keeps the server
// and drops the load generator. Its CPU figure is the whole process's.
type inproc struct {
	url    string
	cancel context.CancelFunc
	done   chan error // app.Run's result
}

// startInProc runs agentik on the database URL db ("sqlite:…" or a
// PostgreSQL URL), with the environment env adds to startAgentik's.
func startInProc(ctx context.Context, db, modelURL string, env ...string) (*inproc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("in-process agentik: %w", err)
	}
	envm := map[string]string{"OPENAI_BASE_URL": modelURL, "OPENAI_MODEL": "fake-model", "HOME": os.TempDir()}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envm[k] = v
	}
	s := inprocSettings(envm)
	s.Addr, s.DB, s.Listener = ln.Addr().String(), db, ln
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &inproc{url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go pprof.Do(rctx, pprof.Labels("side", "server"), func(ctx context.Context) {
		p.done <- app.Run(ctx, s, func(k string) string { return envm[k] }, io.Discard)
	})
	if err := waitReady(ctx, p.url); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("in-process agentik: %w", err), <-p.done)
	}
	return p, nil
}

// inprocSettings are the settings cmd/agentik reads from its environment
// and the bench sets (app.Run leaves them to its caller): the titles, the
// store's mode, the admin's keys and the embedding model (without it the
// knowledge scenario's searches are keyword-only in process).
func inprocSettings(env map[string]string) app.Settings {
	s := app.Settings{LogLevel: slog.LevelWarn, Titles: env["AGENTIK_TITLES"], StoreMode: store.Mode(env[store.ModeEnv]),
		EmbeddingModel: env["AGENTIK_EMBEDDING_MODEL"]}
	if k := env["AGENTIK_API_KEYS"]; k != "" {
		s.APIKeys = strings.Split(k, ",")
	}
	return s
}

// waitReady waits for the server's first /health: the listener is open
// before app.Run starts, so the request waits in its backlog until the
// server serves, and fails when Run gives up (it closes the listener).
func waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/health: %s", resp.Status)
	}
	return nil
}

func (p *inproc) URL() string { return p.url }

func (p *inproc) CPU() time.Duration {
	d, _ := cpuTime(os.Getpid())
	return d
}

func (p *inproc) RSS() int64 {
	n, _ := rss(os.Getpid())
	return n
}

// Close stops the server as a signal stops the binary and waits for it.
func (p *inproc) Close() error {
	closeClientIdle()
	p.cancel()
	return <-p.done
}
