package llm

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// downURL is the address of a server that no longer listens.
func downURL(t *testing.T) string {
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close()
	return ts.URL
}

func TestDetect(t *testing.T) {
	client := &http.Client{}
	ollama := httptest.NewServer(llmtest.NewServer(llmtest.WithModels("llama3.2:latest", "qwen3:8b")))
	defer ollama.Close()
	emptyOllama := httptest.NewServer(llmtest.NewServer(llmtest.WithModels()))
	defer emptyOllama.Close()
	_, compatURL := llmtest.NewHTTPServer(t, llmtest.WithModels("served-model"))
	down := downURL(t)

	tests := []struct {
		name    string
		env     map[string]string
		ollama  string
		want    Config
		wantOK  bool
		wantErr string
	}{
		{name: "nothing", ollama: down},
		{name: "ollama answers", ollama: ollama.URL, wantOK: true,
			want: Config{BaseURL: ollama.URL + "/v1", Model: "llama3.2:latest"}},
		{name: "ollama with OPENAI_MODEL", env: map[string]string{"OPENAI_MODEL": "qwen3:8b"}, ollama: ollama.URL, wantOK: true,
			want: Config{BaseURL: ollama.URL + "/v1", Model: "qwen3:8b"}},
		{name: "ollama without models", ollama: emptyOllama.URL},
		{name: "key only is OpenAI", env: map[string]string{"OPENAI_API_KEY": "sk-test"}, ollama: ollama.URL, wantOK: true,
			want: Config{BaseURL: "https://api.openai.com/v1", APIKey: "sk-test", Model: "gpt-4o-mini"}},
		{name: "key and model", env: map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "gpt-4.1"}, ollama: down, wantOK: true,
			want: Config{BaseURL: "https://api.openai.com/v1", APIKey: "sk-test", Model: "gpt-4.1"}},
		{name: "base URL and model", env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8081/v1/", "OPENAI_MODEL": "m"}, ollama: ollama.URL, wantOK: true,
			want: Config{BaseURL: "http://127.0.0.1:8081/v1", Model: "m"}},
		{name: "base URL lists its model", env: map[string]string{"OPENAI_BASE_URL": compatURL}, ollama: down, wantOK: true,
			want: Config{BaseURL: compatURL, Model: "served-model"}},
		{name: "base URL down, no model", env: map[string]string{"OPENAI_BASE_URL": down + "/v1"}, ollama: ollama.URL,
			wantErr: "OPENAI_MODEL is not set"},
		{name: "malformed base URL", env: map[string]string{"OPENAI_BASE_URL": "localhost:8080", "OPENAI_MODEL": "m"}, ollama: down,
			wantErr: "is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ok, err := detect(t.Context(), env(tt.env), client, tt.ollama)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("detect: %v", err)
			}
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				if cfg != (Config{}) {
					t.Errorf("cfg = %+v, want nothing configured", cfg)
				}
				return
			}
			if cfg.HTTPClient != client {
				t.Errorf("HTTPClient not passed on")
			}
			cfg.HTTPClient = nil
			if cfg != tt.want {
				t.Errorf("cfg = %+v, want %+v", cfg, tt.want)
			}
		})
	}
}

// TestDetectThenChat runs the whole path a server takes against a local
// Ollama: detect it, build the model, stream an answer.
func TestDetectThenChat(t *testing.T) {
	fake := llmtest.NewServer(llmtest.WithModels("llama3.2:latest"))
	ollama := httptest.NewServer(fake)
	defer ollama.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cfg, ok, err := detect(t.Context(), env(nil), &http.Client{Transport: tr}, ollama.URL)
	if err != nil || !ok {
		t.Fatalf("detect = %v, %v", ok, err)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	resp, err := m.Chat(t.Context(), userText("[[reasoning=reasoning]] hi"), func(agent.Delta) error { return nil })
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Text != "You said: hi" || resp.Reasoning != "Thinking about: hi" {
		t.Errorf("resp = %+v", resp)
	}
	if got := fake.Requests()[0]; got.Model != "llama3.2:latest" || got.Header.Get("Authorization") != "" {
		t.Errorf("request model %q, Authorization %q", got.Model, got.Header.Get("Authorization"))
	}
}

// TestDetectErrorRedacted: a base URL with a password and an api-key query
// that gives no model is reported without either.
func TestDetectErrorRedacted(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	base := strings.Replace(ts.URL, "http://", "http://user:hunter22@", 1) + "/v1?api-key=s3cret-query"
	_, ok, err := detect(t.Context(), env(map[string]string{"OPENAI_BASE_URL": base}), nil, "http://127.0.0.1:1")
	if ok || err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("ok %v err %v, want an error naming the 404", ok, err)
	}
	for _, secret := range []string{"hunter22", "s3cret-query"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q shows %q", err, secret)
		}
	}
}
