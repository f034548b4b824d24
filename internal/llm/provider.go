package llm

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// DefaultCheckEvery is how often Providers.Run checks that every provider
// answers (and re-reads the models of "auto" providers).
const DefaultCheckEvery = 30 * time.Second

// ProvidersOptions tune Providers.
type ProvidersOptions struct {
	// CheckEvery is the interval of Run's checks; DefaultCheckEvery when 0.
	CheckEvery  time.Duration
	Timeout     time.Duration // of one Chat call (Config.Timeout)
	IdleTimeout time.Duration // Config.IdleTimeout
	HTTPClient  *http.Client  // nil: a new one
	Logger      *slog.Logger
	// ContextWindow is the window of every model whose providers file
	// entry has none (AGENTIK_CONTEXT_WINDOW); 0: the endpoint's.
	ContextWindow int
}

// Providers is the models of several OpenAI-compatible endpoints: an
// agent.Model that routes each ChatRequest to the provider its model id
// (<provider>/<model>) names, and the agent.Catalog that lists them. A
// provider that does not answer its check marks its models unavailable;
// the others keep working. It is safe for concurrent use.
type Providers struct {
	def   string
	every time.Duration
	log   *slog.Logger
	provs []*provider // in name order

	mu sync.Mutex // guards each provider's state
}

// provider is one endpoint and what its last check found.
type provider struct {
	cfg     ProviderConfig
	model   *Model // its client; Chat names the model per request
	http    *http.Client
	windows *Windows // the context windows of its models

	available bool          // guarded by Providers.mu
	checked   bool          // a check has run
	models    []ModelConfig // auto: the last listing
}

var (
	_ agent.Model   = (*Providers)(nil)
	_ agent.Catalog = (*Providers)(nil)
)

// NewProviders makes the providers of cfg. It does no I/O: until their
// first Check, providers with a model list count as available and "auto"
// ones list no model.
func NewProviders(cfg ProvidersConfig, opts ProvidersOptions) (*Providers, error) {
	if opts.CheckEvery <= 0 {
		opts.CheckEvery = DefaultCheckEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	p := &Providers{def: cfg.Default, every: opts.CheckEvery, log: opts.Logger}
	for _, pc := range cfg.Providers {
		name := "auto"
		if len(pc.Models) > 0 {
			name = pc.Models[0].Name
		}
		m, err := New(Config{BaseURL: pc.BaseURL, APIKey: pc.APIKey, Model: name, Timeout: opts.Timeout, IdleTimeout: opts.IdleTimeout, HTTPClient: opts.HTTPClient, Logger: opts.Logger, Continue: pc.Continue})
		if err != nil {
			return nil, &ProvidersError{Provider: pc.Name, Field: "base_url", Msg: err.Error()}
		}
		fallback := opts.ContextWindow
		if pc.ContextWindow > 0 {
			fallback = pc.ContextWindow
		}
		w := NewWindows(Config{BaseURL: pc.BaseURL, APIKey: pc.APIKey, Model: name, HTTPClient: opts.HTTPClient, Logger: opts.Logger}, fallback)
		for _, mc := range pc.Models {
			if mc.ContextWindow > 0 {
				w.Set(mc.Name, mc.ContextWindow)
			}
		}
		p.provs = append(p.provs, &provider{cfg: pc, model: m, http: opts.HTTPClient, windows: w, available: !pc.Auto, models: pc.Models})
	}
	return p, nil
}

// Default is the id of the default model.
func (p *Providers) Default() string { return p.def }

// Models lists every model of every provider, in provider then listing
// order.
func (p *Providers) Models() []agent.ModelInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []agent.ModelInfo{}
	for _, pv := range p.provs {
		for _, m := range pv.models {
			// The window a turn would use now: configured, discovered or
			// learned, else the runner's default.
			window := m.ContextWindow
			if window == 0 {
				window = pv.windows.Known(m.Name)
			}
			if window == 0 {
				window = agent.DefaultContextWindow
			}
			out = append(out, agent.ModelInfo{
				ID: pv.cfg.Name + "/" + m.Name, Provider: pv.cfg.Name, Name: m.Name,
				ContextWindow: window, Vision: m.Vision, Available: pv.available,
			})
		}
	}
	return out
}

// Check asks every provider, at the same time, for its models (GET
// {base_url}/models): one that answers is available (an "auto" one lists
// what it answered), one that does not is unavailable. It returns once
// every provider answered or timed out.
func (p *Providers) Check(ctx context.Context) {
	var wg sync.WaitGroup
	for _, pv := range p.provs {
		wg.Go(func() { p.check(ctx, pv) })
	}
	wg.Wait()
}

func (p *Providers) check(ctx context.Context, pv *provider) {
	names, err := listModels(ctx, pv.http, pv.cfg.BaseURL+"/models", pv.cfg.APIKey)
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	was, first := pv.available, !pv.checked
	pv.checked = true
	pv.available = err == nil
	if err == nil && pv.cfg.Auto {
		ms := make([]ModelConfig, 0, len(names))
		for _, n := range names {
			ms = append(ms, ModelConfig{Name: n, ContextWindow: pv.cfg.ContextWindow, Vision: pv.cfg.Vision})
		}
		pv.models = ms
	}
	p.mu.Unlock()
	switch {
	case err != nil && (was || first):
		p.log.Warn("provider_unavailable", "provider", pv.cfg.Name, "base_url", shownURL(pv.cfg.BaseURL), "err", newRedactor(pv.cfg.APIKey).apply(err.Error()))
	case err == nil && (!was || first):
		p.log.Info("provider_available", "provider", pv.cfg.Name, "base_url", shownURL(pv.cfg.BaseURL), "models", len(names))
	}
}

// Run checks the providers now and every CheckEvery until ctx is done.
func (p *Providers) Run(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		p.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Chat sends req to the provider its model id names, with that model's
// name; "" is the default model. An id naming no provider fails with
// unavailable; a model of an "auto" provider need not be listed (the
// listing may be stale).
func (p *Providers) Chat(ctx context.Context, req agent.ChatRequest, on func(agent.Delta) error) (agent.ChatResponse, error) {
	id := req.Model
	if id == "" {
		id = p.def
	}
	req.Model = "" // the provider's Model is named per call
	prov, name, _ := strings.Cut(id, "/")
	for _, pv := range p.provs {
		if pv.cfg.Name == prov && name != "" && (pv.cfg.Auto || listedModel(pv.cfg.Models, name)) {
			return pv.model.named(name).Chat(ctx, req, on)
		}
	}
	// A bare model name (AGENTIK_SUMMARY_MODEL=gpt-4o-mini) is a model of
	// the default's provider.
	if dprov, _, _ := strings.Cut(p.def, "/"); !p.known(prov) {
		for _, pv := range p.provs {
			if pv.cfg.Name == dprov {
				return pv.model.named(id).Chat(ctx, req, on)
			}
		}
	}
	return agent.ChatResponse{}, agent.Errorf(agent.CodeUnavailable, "model %q is not configured; choose one of GET /agentik/models", id)
}

// known reports whether name is a provider's.
func (p *Providers) known(name string) bool {
	for _, pv := range p.provs {
		if pv.cfg.Name == name {
			return true
		}
	}
	return false
}

func listedModel(ms []ModelConfig, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

// ProviderName names the provider of a detected Config: "ollama" for a
// found Ollama, else "openai" (the OPENAI_* variables).
func ProviderName(cfg Config) string {
	if cfg.BaseURL == ollamaURL+"/v1" {
		return "ollama"
	}
	return "openai"
}

// SingleProvider is the one provider of the OPENAI_* variables (or a
// found Ollama, or the demo): what agentik runs without a providers file.
// Its model accepts images: a model configured this way always could.
func SingleProvider(name string, cfg Config) ProvidersConfig {
	if cfg.BaseURL == "" {
		cfg.BaseURL = openAIBaseURL
	}
	return ProvidersConfig{
		Providers: []ProviderConfig{{Name: name, BaseURL: strings.TrimRight(cfg.BaseURL, "/"), APIKey: cfg.APIKey, Models: []ModelConfig{{Name: cfg.Model, Vision: true}}, Vision: true, Continue: cfg.Continue}},
		Default:   name + "/" + cfg.Model,
	}
}

// shownURL is raw for logs: without user info or query values.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return safeURL(*u)
}

// Window is the context window of model id ("" = the default model) in
// tokens, 0 when unknown: what a refusal taught (when lower), the model's
// context_window in the providers file (or its provider's), else
// AGENTIK_CONTEXT_WINDOW, else what the provider's endpoint reports
// (llm.Windows, one per provider). The context budget of a conversation
// asks with its model, so it follows the model.
func (p *Providers) Window(ctx context.Context, id string) int {
	if pv, name := p.resolve(id); pv != nil {
		return pv.windows.Window(ctx, name)
	}
	return 0
}

// Learn records the window model id revealed by refusing a longer prompt.
func (p *Providers) Learn(id string, tokens int) {
	if pv, name := p.resolve(id); pv != nil {
		pv.windows.Learn(name, tokens)
	}
}

// resolve is the provider of model id and the model's name there.
func (p *Providers) resolve(id string) (*provider, string) {
	if id == "" {
		id = p.def
	}
	prov, name, _ := strings.Cut(id, "/")
	for _, pv := range p.provs {
		if pv.cfg.Name == prov && name != "" {
			return pv, name
		}
	}
	return nil, ""
}
