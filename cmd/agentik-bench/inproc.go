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
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
)

// inproc is agentik wired in this process, as cmd/agentik wires it, for
// -cpuprofile: every goroutine it starts carries the profile label
// side=server, so `go tool pprof -tagfocus side=server` keeps the server
// and drops the load generator. Its CPU figure is the whole process's.
type inproc struct {
	url    string
	st     *store.Store
	runner *agent.Runner
	srv    *server.Server
	hs     *http.Server
	wg     sync.WaitGroup
	err    error
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
	var b *broker.Broker
	p.st, err = store.Open(ctx, "sqlite:"+db, store.Options{Publish: func(evs []agent.AllEvent) { b.Publish(evs...) }, Logger: log})
	if err != nil {
		ln.Close()
		return fmt.Errorf("in-process agentik: %w", err)
	}
	b = broker.New(p.st, log)
	m, err := llm.New(llm.Config{BaseURL: modelURL, Model: "fake-model", Logger: log})
	if err != nil {
		ln.Close()
		p.st.Close()
		return fmt.Errorf("in-process agentik: %w", err)
	}
	p.runner = agent.NewRunner(agent.Config{Store: p.st, Cluster: p.st, Publisher: b, Model: m, Logger: log})
	p.srv = server.New(server.Config{Runner: p.runner, Broker: b, Store: p.st, ModelName: m.Name(), Logger: log})
	p.hs = &http.Server{Handler: p.srv, ReadHeaderTimeout: 10 * time.Second}
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
	err := errors.Join(p.runner.Close(ctx), p.srv.Shutdown(ctx), p.hs.Shutdown(ctx))
	p.wg.Wait()
	return errors.Join(err, p.err, p.st.Close())
}
