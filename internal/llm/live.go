package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/agentik/agentik/internal/agent"
)

// Live is the server's models as the admin panel changes them: an
// agent.Model, agent.Catalog and agent.Windows over the Providers set
// last. Each call reads the current Providers once, so a turn's model
// call goes to the providers of the moment it started; Set swaps them for
// the next ones. It is safe for concurrent use.
type Live struct {
	mu   sync.Mutex
	p    *Providers    // nil: no model
	swap chan struct{} // closed by Set: Run checks the new providers
}

var (
	_ agent.Model   = (*Live)(nil)
	_ agent.Catalog = (*Live)(nil)
	_ agent.Windows = (*Live)(nil)
)

// NewLive is a Live over p (nil: no model yet).
func NewLive(p *Providers) *Live { return &Live{p: p, swap: make(chan struct{})} }

// Set makes p the providers of the next calls (nil: none).
func (l *Live) Set(p *Providers) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p = p
	close(l.swap)
	l.swap = make(chan struct{})
}

// Current is the providers of the next call; nil without any.
func (l *Live) Current() *Providers {
	p, _ := l.current()
	return p
}

func (l *Live) current() (*Providers, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p, l.swap
}

// Configured reports whether there is a model to call (agent.Runner's
// ModelConfigured).
func (l *Live) Configured() bool { return l.Current() != nil }

// Chat implements agent.Model.
func (l *Live) Chat(ctx context.Context, req agent.ChatRequest, on func(agent.Delta) error) (agent.ChatResponse, error) {
	p := l.Current()
	if p == nil {
		return agent.ChatResponse{}, agent.Errorf(agent.CodeUnavailable, "no model is configured: an admin adds a provider in the admin panel (/admin)")
	}
	return p.Chat(ctx, req, on)
}

// Models implements agent.Catalog.
func (l *Live) Models() []agent.ModelInfo {
	if p := l.Current(); p != nil {
		return p.Models()
	}
	return []agent.ModelInfo{}
}

// Default implements agent.Catalog.
func (l *Live) Default() string {
	if p := l.Current(); p != nil {
		return p.Default()
	}
	return ""
}

// Window implements agent.Windows.
func (l *Live) Window(ctx context.Context, id string) int {
	if p := l.Current(); p != nil {
		return p.Window(ctx, id)
	}
	return 0
}

// Learn implements agent.Windows.
func (l *Live) Learn(id string, tokens int) {
	if p := l.Current(); p != nil {
		p.Learn(id, tokens)
	}
}

// Run checks the current providers (Providers.Run) until ctx is done,
// moving to the new ones whenever Set is called.
func (l *Live) Run(ctx context.Context) {
	for {
		p, swap := l.current()
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if p != nil {
				p.Run(cctx)
			}
		}()
		select {
		case <-ctx.Done():
		case <-swap:
		}
		cancel()
		<-done
		if ctx.Err() != nil {
			return
		}
	}
}

// ListModels asks the OpenAI-compatible endpoint at baseURL for its
// models (GET {baseURL}/models): the admin panel's test of a provider.
// Its errors name neither the URL's secrets nor the key.
func ListModels(ctx context.Context, baseURL, apiKey string) ([]string, error) {
	names, err := listModels(ctx, &http.Client{}, strings.TrimRight(baseURL, "/")+"/models", apiKey)
	if err != nil {
		return nil, fmt.Errorf("GET %s/models: %s", shownURL(strings.TrimRight(baseURL, "/")), newRedactor(apiKey).apply(err.Error()))
	}
	return names, nil
}
