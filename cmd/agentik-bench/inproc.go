package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/server"
)

// inproc is agentik wired in this process, as cmd/agentik wires it, for
// -cpuprofile: every goroutine it starts carries the profile label
// side=server, so `go tool pprof -tagfocus side=server` keeps the server
// and drops the load generator. Its CPU figure is the whole process's.
type inproc struct {
	url string
	app *app.App
	hs  *http.Server
	wg  sync.WaitGroup
	err error
}

func startInProc(ctx context.Context, db, modelURL string) (*inproc, error) {
	p := &inproc{}
	var err error
	pprof.Do(ctx, pprof.Labels("side", "server"), func(ctx context.Context) { err = p.start(ctx, db, modelURL) })
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (p *inproc) start(ctx context.Context, db, modelURL string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("in-process agentik: %w", err)
	}
	p.url = "http://" + ln.Addr().String()
	log := slog.New(slog.DiscardHandler)
	p.app, err = app.Open(ctx, app.Config{DB: "sqlite:" + db, Logger: log})
	if err != nil {
		ln.Close()
		return fmt.Errorf("in-process agentik: %w", err)
	}
	m, err := llm.New(llm.Config{BaseURL: modelURL, Model: "fake-model", Logger: log})
	if err == nil {
		err = p.app.Start(ctx, agent.Config{Model: m}, server.Config{ModelName: m.Name()})
	}
	if err != nil {
		ln.Close()
		p.app.Close(ctx)
		return fmt.Errorf("in-process agentik: %w", err)
	}
	p.hs = &http.Server{Handler: p.app.Server, ReadHeaderTimeout: 10 * time.Second}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := p.hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			p.err = err
		}
	}()
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

func (p *inproc) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errors.Join(p.app.Runner.Close(ctx), p.app.Server.Shutdown(ctx), p.hs.Shutdown(ctx))
	p.wg.Wait()
	return errors.Join(err, p.err, p.app.Close(ctx))
}
