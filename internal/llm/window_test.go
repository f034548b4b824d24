package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm/llmtest"
)

func TestWindowsOrder(t *testing.T) {
	ctx := context.Background()
	_, listed := llmtest.NewHTTPServer(t, llmtest.WithListedWindow(32768))
	w := NewWindows(Config{BaseURL: listed, Model: "fake-model"}, 0)
	if got := w.Window(ctx, ""); got != 32768 {
		t.Errorf("discovered from /v1/models: %d", got)
	}
	w.Learn("", 16000)
	if got := w.Window(ctx, "fake-model"); got != 16000 {
		t.Errorf("learned: %d", got)
	}
	w.Learn("", 64000) // a refusal never raises what is known
	if got := w.Window(ctx, ""); got != 32768 {
		t.Errorf("learned above the known window: %d", got)
	}
	if got := NewWindows(Config{BaseURL: listed, Model: "fake-model"}, 4096).Window(ctx, ""); got != 4096 {
		t.Errorf("explicit: %d", got)
	}
	set := NewWindows(Config{BaseURL: listed, Model: "fake-model"}, 4096)
	set.Set("other", 2048)
	if got := set.Window(ctx, "other"); got != 2048 {
		t.Errorf("per model: %d", got)
	}

	// Ollama: /v1/models says nothing, /api/show has model_info.
	ollama := http.NewServeMux()
	ollama.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"qwen3:8b","object":"model"}]}`))
	})
	ollama.HandleFunc("POST /api/show", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"model_info":{"general.architecture":"qwen3","qwen3.context_length":40960}}`))
	})
	ts := httptest.NewServer(ollama)
	defer ts.Close()
	if got := NewWindows(Config{BaseURL: ts.URL + "/v1", Model: "qwen3:8b"}, 0).Window(ctx, ""); got != 40960 {
		t.Errorf("ollama /api/show: %d", got)
	}
	// vLLM's max_model_len.
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"data":[{"id":"m","max_model_len":4096}]}`))
	}))
	defer vllm.Close()
	if got := NewWindows(Config{BaseURL: vllm.URL + "/v1", Model: "m"}, 0).Window(ctx, ""); got != 4096 {
		t.Errorf("vllm max_model_len: %d", got)
	}
	// Nothing reported: 0 (the runner's default), and the endpoint is asked once.
	_, bare := llmtest.NewHTTPServer(t)
	if got := NewWindows(Config{BaseURL: bare, Model: "fake-model"}, 0).Window(ctx, ""); got != 0 {
		t.Errorf("unreported: %d", got)
	}
}

func TestContextExceededMessages(t *testing.T) {
	merr := agent.Errorf(agent.CodeModelError, "x")
	tests := []struct {
		name           string
		err            error
		window, prompt int
	}{
		{"openai code", &openai.APIError{Code: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."}, 8192, 9000},
		{"vllm", &openai.APIError{Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."}, 4096, 5000},
		{"llama.cpp", &openai.APIError{Message: "the request exceeds the available context size, try increasing it"}, 0, 0},
		{"llama.cpp sizes", &openai.RequestError{HTTPStatusCode: 400, Body: []byte(`{"error":{"message":"request (9000 tokens) exceeds the available context size (8192 tokens)"}}`)}, 8192, 9000},
		{"ollama", &openai.APIError{Message: "input length exceeds the context length"}, 0, 0},
	}
	for _, tt := range tests {
		ce := contextExceeded(tt.err, merr)
		if ce == nil || ce.Window != tt.window || ce.Prompt != tt.prompt || !errors.Is(ce, agent.ErrModel) {
			t.Errorf("%s: %+v", tt.name, ce)
		}
	}
	if ce := contextExceeded(&openai.APIError{Message: "model not found"}, merr); ce != nil {
		t.Errorf("not a refusal: %+v", ce)
	}
}
