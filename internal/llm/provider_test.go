package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

func TestParseProviders(t *testing.T) {
	getenv := env(map[string]string{"KEY": "sk-secret", "HOST": "h.example"})
	cfg, err := ParseProviders([]byte(`{
		"providers": {
			"local": {"base_url": "http://${HOST}:11434/v1/", "models": "auto", "vision": true},
			"cloud": {"base_url": "${BASE:-https://api.example.com/v1}", "api_key": "${KEY}", "context_window": 8000,
				"models": ["small", {"name": "big", "context_window": 128000, "vision": true}]}
		},
		"default": "cloud/big"}`), getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := ProvidersConfig{
		Providers: []ProviderConfig{
			{Name: "cloud", BaseURL: "https://api.example.com/v1", APIKey: "sk-secret", ContextWindow: 8000, Models: []ModelConfig{
				{Name: "small", ContextWindow: 8000}, {Name: "big", ContextWindow: 128000, Vision: true}}},
			{Name: "local", BaseURL: "http://h.example:11434/v1", Auto: true, Vision: true},
		},
		Default: "cloud/big",
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Without a default, the first model of the first provider.
	cfg, err = ParseProviders([]byte(`{"providers":{"b":{"base_url":"http://b/v1","models":["m"]},"a":{"base_url":"http://a/v1","models":["x","y"]}}}`), nil)
	if err != nil || cfg.Default != "a/x" {
		t.Errorf("default: %q, %v; want a/x", cfg.Default, err)
	}
}

// TestParseProvidersErrors: every bad file stops the start with an error
// naming the provider and the field.
func TestParseProvidersErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string // in the error
	}{
		{"not json", `{`, []string{"providers file"}},
		{"unknown top field", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"]}},"defualt":"a/m"}`, []string{`unknown field "defualt"`}},
		{"no providers", `{"providers":{}}`, []string{"providers: must name at least one provider"}},
		{"unknown provider field", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"],"apikey":"x"}}}`, []string{`provider "a"`, `unknown field "apikey"`}},
		{"missing base_url", `{"providers":{"a":{"models":["m"]}}}`, []string{`provider "a"`, "base_url: is missing"}},
		{"bad base_url", `{"providers":{"a":{"base_url":"ftp://a","models":["m"]}}}`, []string{`provider "a"`, "base_url: is not an http(s) URL"}},
		{"unresolved var", `{"providers":{"a":{"base_url":"http://a/v1","api_key":"${NOPE}","models":["m"]}}}`, []string{`provider "a"`, "api_key", "NOPE is not set"}},
		{"unresolved var in url", `{"providers":{"a":{"base_url":"${URL}","models":["m"]}}}`, []string{`provider "a"`, "base_url", "URL is not set"}},
		{"missing models", `{"providers":{"a":{"base_url":"http://a/v1"}}}`, []string{`provider "a"`, "models: is missing"}},
		{"models not auto", `{"providers":{"a":{"base_url":"http://a/v1","models":"all"}}}`, []string{`provider "a"`, "models", `"all"`}},
		{"empty models", `{"providers":{"a":{"base_url":"http://a/v1","models":[]}}}`, []string{`provider "a"`, "models: must be a non-empty list"}},
		{"unknown model field", `{"providers":{"a":{"base_url":"http://a/v1","models":[{"name":"m","vison":true}]}}}`, []string{`provider "a"`, "models[0]", `unknown field "vison"`}},
		{"model without name", `{"providers":{"a":{"base_url":"http://a/v1","models":[{"vision":true}]}}}`, []string{`provider "a"`, "models[0]: has no model name"}},
		{"duplicate model", `{"providers":{"a":{"base_url":"http://a/v1","models":["m","m"]}}}`, []string{`provider "a"`, "models[1]", "twice"}},
		{"negative window", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"],"context_window":-1}}}`, []string{`provider "a"`, "context_window"}},
		{"bad continue", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"],"continue":"resume"}}}`, []string{`provider "a"`, "continue: must be instruction or prefix", `"resume"`}},
		{"bad provider name", `{"providers":{"a/b":{"base_url":"http://a/v1","models":["m"]}}}`, []string{`provider "a/b"`, "without spaces or /"}},
		{"default names no model", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"]}},"default":"a/n"}`, []string{"default", `"a/n" names no model of provider "a"`, "m"}},
		{"default names no provider", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"]}},"default":"b/m"}`, []string{"default", `"b/m" names no provider`}},
		{"default without slash", `{"providers":{"a":{"base_url":"http://a/v1","models":["m"]}},"default":"m"}`, []string{"default", "names no provider"}},
		{"auto without default", `{"providers":{"a":{"base_url":"http://a/v1","models":"auto"}}}`, []string{"default", "is missing", `provider "a"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProviders([]byte(tc.file), env(nil))
			if err == nil {
				t.Fatal("parsed without error")
			}
			var pe *ProvidersError
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *ProvidersError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// switchable serves h, or 503 while down.
func switchable(t *testing.T, h http.Handler, down *atomic.Bool) string {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

// TestProvidersRouteAndCheck: two fake servers as two providers. Each
// request goes to the provider its model id names, with that model's name
// and the params; a provider down at start lists its models unavailable,
// the other keeps working, and a later check finds it back.
func TestProvidersRouteAndCheck(t *testing.T) {
	fakeA := llmtest.NewServer(llmtest.WithModels("alpha-1", "alpha-2"))
	fakeB := llmtest.NewServer(llmtest.WithModels("beta"))
	var downA, downB atomic.Bool
	downB.Store(true)
	urlA, urlB := switchable(t, fakeA, &downA), switchable(t, fakeB, &downB)
	cfg, err := ParseProviders([]byte(`{"providers":{
		"a":{"base_url":"`+urlA+`","models":["alpha-1",{"name":"alpha-2","vision":true,"context_window":4096}]},
		"b":{"base_url":"`+urlB+`","models":"auto","context_window":2048}},
		"default":"a/alpha-1"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProviders(cfg, ProvidersOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Check(t.Context())
	want := []agent.ModelInfo{
		{ID: "a/alpha-1", Provider: "a", Name: "alpha-1", ContextWindow: agent.DefaultContextWindow, Available: true}, // nothing known yet: the runner's default
		{ID: "a/alpha-2", Provider: "a", Name: "alpha-2", ContextWindow: 4096, Vision: true, Available: true},
	}
	if diff := cmp.Diff(want, p.Models()); diff != "" {
		t.Errorf("models with b down (-want +got):\n%s", diff)
	}
	if p.Default() != "a/alpha-1" {
		t.Errorf("default %q", p.Default())
	}

	temp, maxTok, topP := 0.0, 77, 0.5
	req := userText("hi")
	req.Params = &agent.Params{Temperature: &temp, MaxTokens: &maxTok, TopP: &topP}
	if _, err := p.Chat(t.Context(), req, nil); err != nil { // the default
		t.Fatal(err)
	}
	req.Model = "a/alpha-2"
	req.Params = nil
	if _, err := p.Chat(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	reqs := fakeA.Requests()
	if len(reqs) != 2 || reqs[0].Model != "alpha-1" || reqs[1].Model != "alpha-2" {
		t.Fatalf("a received %d requests: %+v", len(reqs), reqs)
	}
	if r := reqs[0]; r.Temperature == nil || *r.Temperature > 1e-5 || r.MaxTokens != 77 || r.TopP == nil || *r.TopP != 0.5 {
		t.Errorf("params sent: temperature %v max_tokens %v top_p %v", r.Temperature, r.MaxTokens, r.TopP)
	}
	if r := reqs[1]; r.Temperature != nil || r.MaxTokens != 0 || r.TopP != nil {
		t.Errorf("no params, yet sent: %s", r.Body)
	}

	// b comes back: its models are listed, available, and answer.
	downB.Store(false)
	p.Check(t.Context())
	got := p.Models()
	if len(got) != 3 || got[2] != (agent.ModelInfo{ID: "b/beta", Provider: "b", Name: "beta", ContextWindow: 2048, Available: true}) {
		t.Fatalf("models with b back: %+v", got)
	}
	req.Model = "b/beta"
	if _, err := p.Chat(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	if reqs := fakeB.Requests(); len(reqs) != 1 || reqs[0].Model != "beta" {
		t.Errorf("b received %+v", reqs)
	}

	// a goes down: its models stay listed, unavailable; b is unaffected.
	downA.Store(true)
	p.Check(t.Context())
	for _, m := range p.Models() {
		if m.Available != (m.Provider == "b") {
			t.Errorf("%s available = %v with a down", m.ID, m.Available)
		}
	}

	req.Model = "a/nothing"
	if _, err := p.Chat(t.Context(), req, nil); agent.ErrorCode(err) != agent.CodeUnavailable {
		t.Errorf("unknown model of a listed provider: %v", err)
	}

	// A bare name (AGENTIK_SUMMARY_MODEL) goes to the default's provider.
	downA.Store(false)
	req.Model = "summarizer"
	if _, err := p.Chat(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	if reqs := fakeA.Requests(); reqs[len(reqs)-1].Model != "summarizer" {
		t.Errorf("bare name sent as %q", reqs[len(reqs)-1].Model)
	}
}

// TestProvidersRun: Run checks again every CheckEvery.
func TestProvidersRun(t *testing.T) {
	fake := llmtest.NewServer()
	var down atomic.Bool
	down.Store(true)
	u := switchable(t, fake, &down)
	p, err := NewProviders(ProvidersConfig{Providers: []ProviderConfig{{Name: "x", BaseURL: u, Auto: true}}, Default: "x/fake-model"}, ProvidersOptions{CheckEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Check(t.Context())
	if len(p.Models()) != 0 {
		t.Fatalf("down: %+v", p.Models())
	}
	down.Store(false)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for len(p.Models()) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("never found the provider back")
		case <-time.After(time.Millisecond):
		}
	}
}

// TestProvidersWindow: the window of each model id, from the file, the
// endpoint, or taught by a refusal.
func TestProvidersWindow(t *testing.T) {
	fake := llmtest.NewServer(llmtest.WithModels("x"), llmtest.WithListedWindow(16000))
	ts := httptest.NewServer(fake)
	defer ts.Close()
	cfg, err := ParseProviders([]byte(`{"providers":{
		"a":{"base_url":"`+downURL(t)+`/v1","context_window":8000,"models":["m1",{"name":"m2","context_window":32000}]},
		"b":{"base_url":"`+ts.URL+`/v1","models":"auto"}},"default":"a/m2"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProviders(cfg, ProvidersOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// b's window is what its endpoint reports.
	for id, want := range map[string]int{"": 32000, "a/m2": 32000, "a/m1": 8000, "b/x": 16000, "c/y": 0} {
		if got := p.Window(ctx, id); got != want {
			t.Errorf("Window(%q) = %d, want %d", id, got, want)
		}
	}
	p.Learn("a/m1", 4000)
	if got := p.Window(ctx, "a/m1"); got != 4000 {
		t.Errorf("learned window = %d", got)
	}
}
