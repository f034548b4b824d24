package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// modelsServer answers GET /v1/models (and nothing else) with status and
// body, requiring key when set.
func modelsServer(t *testing.T, key, body string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"Incorrect API key provided: `+r.Header.Get("Authorization")+`"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestProbe(t *testing.T) {
	list := `{"object":"list","data":[{"id":"qwen3:8b"},{"id":"llama3.2:latest"}]}`
	ok := modelsServer(t, "", list)
	keyed := modelsServer(t, "sk-right-key-123456", list)
	page := modelsServer(t, "", `<html>hello</html>`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()

	tests := []struct {
		name      string
		cfg       Config
		wantOK    bool
		want      []string // in the problem or fix
		forbidden []string // secrets
	}{
		{name: "fine", cfg: Config{BaseURL: ok.URL + "/v1", Model: "qwen3:8b"}, wantOK: true},
		{name: "ollama latest", cfg: Config{BaseURL: ok.URL + "/v1/", Model: "llama3.2"}, wantOK: true},
		{name: "no model named", cfg: Config{BaseURL: ok.URL + "/v1"}, wantOK: true},
		{name: "missing v1", cfg: Config{BaseURL: ok.URL, Model: "qwen3:8b"}, want: []string{"404", "lacks /v1", ok.URL + "/v1"}},
		{name: "wrong key", cfg: Config{BaseURL: keyed.URL + "/v1", Model: "qwen3:8b", APIKey: "sk-wrong-key-987654"},
			want: []string{"refused the API key", "401", "OPENAI_API_KEY"}, forbidden: []string{"sk-wrong-key-987654"}},
		{name: "no key", cfg: Config{BaseURL: keyed.URL + "/v1", Model: "qwen3:8b"}, want: []string{"wants an API key", "OPENAI_API_KEY"}},
		{name: "right key", cfg: Config{BaseURL: keyed.URL + "/v1", Model: "qwen3:8b", APIKey: "sk-right-key-123456"}, wantOK: true},
		{name: "unreachable", cfg: Config{BaseURL: "http://user:hunter2@" + strings.TrimPrefix(dead, "http://") + "?api-key=s3cret", Model: "m"},
			want: []string{"cannot be reached", "OPENAI_BASE_URL"}, forbidden: []string{"hunter2", "s3cret", "user:"}},
		{name: "unknown model", cfg: Config{BaseURL: ok.URL + "/v1", Model: "gpt-5"}, want: []string{`"gpt-5"`, "qwen3:8b, llama3.2:latest", "OPENAI_MODEL"}},
		{name: "not an API", cfg: Config{BaseURL: page.URL + "/v1", Model: "m"}, want: []string{"model list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Probe(context.Background(), tt.cfg)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Probe = %v, want nil", err)
				}
				return
			}
			var pe *ProbeError
			if !errors.As(err, &pe) {
				t.Fatalf("Probe = %v (%T), want a *ProbeError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			for _, f := range tt.forbidden {
				if strings.Contains(err.Error(), f) {
					t.Errorf("%q shows the secret %q", err, f)
				}
			}
		})
	}
}
