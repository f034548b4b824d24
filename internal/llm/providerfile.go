package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/agentik/agentik/internal/envvar"
)

// ProviderConfig is one named OpenAI-compatible endpoint of the providers
// file, its variables expanded.
type ProviderConfig struct {
	Name    string
	BaseURL string
	APIKey  string
	// Models are the models it serves; with Auto they are read from its
	// GET /models instead (and re-read at every check).
	Models []ModelConfig
	Auto   bool
	// ContextWindow and Vision are the defaults of its models.
	ContextWindow int
	Vision        bool
	// Continue is how its models continue a cut-off answer
	// (Config.Continue).
	Continue string
}

// ModelConfig is one model of a provider.
type ModelConfig struct {
	Name          string
	ContextWindow int  // tokens; 0: the provider's, else unknown
	Vision        bool // accepts image input
}

// ProvidersConfig is the providers file (AGENTIK_PROVIDERS).
type ProvidersConfig struct {
	Providers []ProviderConfig // in name order
	Default   string           // <provider>/<model>
}

// ProvidersError is a malformed providers file: it names the provider and
// the field.
type ProvidersError struct {
	Provider string // "" for the file as a whole
	Field    string
	Msg      string
}

func (e *ProvidersError) Error() string {
	var b strings.Builder
	b.WriteString("providers file")
	if e.Provider != "" {
		fmt.Fprintf(&b, ": provider %q", e.Provider)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// LoadProviders reads and parses the providers file at path.
func LoadProviders(path string, getenv func(string) string) (ProvidersConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ProvidersConfig{}, fmt.Errorf("providers file: %w", err)
	}
	cfg, err := ParseProviders(data, getenv)
	if err != nil {
		return ProvidersConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

type providersJSON struct {
	Providers map[string]json.RawMessage `json:"providers"`
	Default   string                     `json:"default"`
}

type providerJSON struct {
	BaseURL       string          `json:"base_url"`
	APIKey        string          `json:"api_key"`
	Models        json.RawMessage `json:"models"`
	ContextWindow int             `json:"context_window"`
	Vision        bool            `json:"vision"`
	Continue      string          `json:"continue"`
}

type modelJSON struct {
	Name          string `json:"name"`
	ContextWindow *int   `json:"context_window"`
	Vision        *bool  `json:"vision"`
}

// strict decodes raw into v, refusing unknown fields; it returns the
// message of the first problem.
func strict(raw []byte, v any) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "json: ")
		return msg
	}
	return ""
}

// ParseProviders parses the text of a providers file:
//
//	{"providers": {"<name>": {"base_url": "…", "api_key"?: "…",
//	   "models": ["m1", {"name": "m2", "context_window": 32768, "vision": true}] | "auto",
//	   "context_window"?: N, "vision"?: bool, "continue"?: "instruction"|"prefix"}},
//	 "default": "<name>/<model>"}
//
// base_url and api_key expand ${VAR} and ${VAR:-default} as mcp.json does.
// An unknown field, a missing base_url, an unresolved variable, an empty
// model list or a default naming no model is a *ProvidersError. Without a
// default, the first model of the first provider (in name order) is it.
func ParseProviders(data []byte, getenv func(string) string) (ProvidersConfig, error) {
	var top providersJSON
	if msg := strict(data, &top); msg != "" {
		return ProvidersConfig{}, &ProvidersError{Msg: msg}
	}
	if len(top.Providers) == 0 {
		return ProvidersConfig{}, &ProvidersError{Field: "providers", Msg: `must name at least one provider, e.g. {"providers":{"ollama":{"base_url":"http://127.0.0.1:11434/v1","models":"auto"}}}`}
	}
	names := make([]string, 0, len(top.Providers))
	for n := range top.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	var cfg ProvidersConfig
	for _, name := range names {
		p, err := parseProvider(name, top.Providers[name], getenv)
		if err != nil {
			return ProvidersConfig{}, err
		}
		cfg.Providers = append(cfg.Providers, p)
	}
	cfg.Default = strings.TrimSpace(top.Default)
	if cfg.Default == "" {
		first := cfg.Providers[0]
		if first.Auto {
			return ProvidersConfig{}, &ProvidersError{Field: "default", Msg: fmt.Sprintf("is missing, and provider %q lists its models only once it answers: name the default model as <provider>/<model>", first.Name)}
		}
		cfg.Default = first.Name + "/" + first.Models[0].Name
		return cfg, nil
	}
	prov, model, ok := strings.Cut(cfg.Default, "/")
	for _, p := range cfg.Providers {
		if !ok || p.Name != prov {
			continue
		}
		if p.Auto {
			return cfg, nil // checked once the provider lists its models
		}
		for _, m := range p.Models {
			if m.Name == model {
				return cfg, nil
			}
		}
		return ProvidersConfig{}, &ProvidersError{Field: "default", Msg: fmt.Sprintf("%q names no model of provider %q (its models: %s)", cfg.Default, prov, strings.Join(modelNames(p.Models), ", "))}
	}
	return ProvidersConfig{}, &ProvidersError{Field: "default", Msg: fmt.Sprintf("%q names no provider; write <provider>/<model> with one of: %s", cfg.Default, strings.Join(names, ", "))}
}

func modelNames(ms []ModelConfig) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func parseProvider(name string, raw json.RawMessage, getenv func(string) string) (ProviderConfig, error) {
	fail := func(field, format string, args ...any) (ProviderConfig, error) {
		return ProviderConfig{}, &ProvidersError{Provider: name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if name == "" || strings.ContainsAny(name, "/ \t\n") {
		return fail("", "a provider name must be non-empty, without spaces or /")
	}
	var pj providerJSON
	if msg := strict(raw, &pj); msg != "" {
		return fail("", "%s", msg)
	}
	x := envvar.Expander{Getenv: getenv}
	p := ProviderConfig{Name: name, ContextWindow: pj.ContextWindow, Vision: pj.Vision}
	var err error
	if p.BaseURL, err = x.Expand(strings.TrimSpace(pj.BaseURL)); err != nil {
		return fail("base_url", "%v", err)
	}
	if p.BaseURL == "" {
		return fail("base_url", "is missing: the OpenAI-compatible API root, e.g. http://127.0.0.1:11434/v1")
	}
	p.BaseURL = strings.TrimRight(p.BaseURL, "/")
	if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("base_url", "is not an http(s) URL")
	}
	if p.APIKey, err = x.Expand(pj.APIKey); err != nil {
		return fail("api_key", "%v", err)
	}
	if p.Continue, err = ParseContinue(pj.Continue); err != nil {
		return fail("continue", "%v (prefix: the server continues a final assistant message, as vLLM does)", err)
	}
	if p.ContextWindow < 0 {
		return fail("context_window", "must be a positive number of tokens, got %d", p.ContextWindow)
	}
	var auto string
	if len(pj.Models) == 0 || string(pj.Models) == "null" {
		return fail("models", `is missing: a list of model names, or "auto" to read GET /models`)
	}
	if json.Unmarshal(pj.Models, &auto) == nil {
		if auto != "auto" {
			return fail("models", `must be a list of model names or "auto", got %q`, auto)
		}
		p.Auto = true
		return p, nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(pj.Models, &entries) != nil || len(entries) == 0 {
		return fail("models", `must be a non-empty list of model names (or objects {"name","context_window","vision"}), or "auto"`)
	}
	seen := map[string]bool{}
	for i, e := range entries {
		field := fmt.Sprintf("models[%d]", i)
		m := ModelConfig{ContextWindow: p.ContextWindow, Vision: p.Vision}
		if json.Unmarshal(e, &m.Name) != nil {
			var mj modelJSON
			if msg := strict(e, &mj); msg != "" {
				return fail(field, "%s", msg)
			}
			m.Name = mj.Name
			if mj.ContextWindow != nil {
				if *mj.ContextWindow < 0 {
					return fail(field+".context_window", "must be a positive number of tokens, got %d", *mj.ContextWindow)
				}
				m.ContextWindow = *mj.ContextWindow
			}
			if mj.Vision != nil {
				m.Vision = *mj.Vision
			}
		}
		m.Name = strings.TrimSpace(m.Name)
		if m.Name == "" {
			return fail(field, "has no model name")
		}
		if seen[m.Name] {
			return fail(field, "model %q is listed twice", m.Name)
		}
		seen[m.Name] = true
		p.Models = append(p.Models, m)
	}
	return p, nil
}
