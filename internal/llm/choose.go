package llm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// ChooseOptions say where a server's models come from.
type ChooseOptions struct {
	// ProvidersFile (AGENTIK_PROVIDERS) lists several endpoints and their
	// models; it replaces the OPENAI_* variables.
	ProvidersFile string
	// Fixed, when set, is the one endpoint to use instead of the
	// environment (the demo's scripted model), named FixedName.
	Fixed     *Config
	FixedName string
	// ContextWindow (AGENTIK_CONTEXT_WINDOW) overrides every model's
	// window; 0: discovered, else 8192.
	ContextWindow int
	Getenv        func(string) string
	Logger        *slog.Logger
}

// Choice is the models a server runs with.
type Choice struct {
	// Providers are the models conversations pick from; nil without any.
	Providers *Providers
	// Default names the default model ("" without one).
	Default string
	// FileProviders counts the providers of the providers file (0 without one).
	FileProviders int
	// Endpoint is the one endpoint of OPENAI_* (or Fixed), which the
	// server probes at start; nil with a providers file or no model.
	Endpoint *Config
	// Config is what Providers were made of (the admin panel adds its
	// own providers to it).
	Config ProvidersConfig
	// Problem says why the configured model is not available (a local
	// server that is not up yet): the server starts without a model and
	// says so on every send, instead of staying down.
	Problem error
}

// Choose picks the models from o: the providers file, else the fixed
// endpoint, else what the environment names (Detect). A configuration
// that cannot work is an error; an endpoint that does not answer is the
// Choice's Problem.
func Choose(ctx context.Context, o ChooseOptions) (Choice, error) {
	if o.ProvidersFile != "" && o.Fixed == nil {
		pcfg, err := LoadProviders(o.ProvidersFile, o.Getenv)
		if err != nil {
			return Choice{}, err
		}
		ps, err := NewProviders(pcfg, ProvidersOptions{Logger: o.Logger, ContextWindow: o.ContextWindow})
		if err != nil {
			return Choice{}, err
		}
		return Choice{Providers: ps, Default: pcfg.Default, FileProviders: len(pcfg.Providers), Config: pcfg}, nil
	}
	var mcfg Config
	var ok bool
	var err error
	if o.Fixed != nil {
		mcfg, ok = *o.Fixed, true
	} else {
		mcfg, ok, err = Detect(ctx, o.Getenv, nil)
	}
	if err != nil {
		return Choice{Problem: err}, nil
	}
	if !ok {
		return Choice{}, nil
	}
	mcfg.Logger = o.Logger
	if o.Fixed == nil && o.Getenv != nil {
		if mcfg.Continue, err = ParseContinue(strings.TrimSpace(o.Getenv("AGENTIK_MODEL_CONTINUE"))); err != nil {
			return Choice{}, fmt.Errorf("AGENTIK_MODEL_CONTINUE %w (prefix: the server continues a final assistant message, as vLLM does)", err)
		}
	}
	if _, err := New(mcfg); err != nil {
		return Choice{}, fmt.Errorf("model: %w", err)
	}
	name := ProviderName(mcfg)
	if o.Fixed != nil && o.FixedName != "" {
		name = o.FixedName
	}
	pcfg := SingleProvider(name, mcfg)
	ps, err := NewProviders(pcfg, ProvidersOptions{Logger: o.Logger, HTTPClient: mcfg.HTTPClient, ContextWindow: o.ContextWindow})
	if err != nil {
		return Choice{}, fmt.Errorf("model: %w", err)
	}
	return Choice{Providers: ps, Default: mcfg.Model, Endpoint: &mcfg, Config: pcfg}, nil
}
