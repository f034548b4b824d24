package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Endpoints Detect knows.
const (
	openAIBaseURL      = "https://api.openai.com/v1"
	openAIDefaultModel = "gpt-4o-mini"
	ollamaURL          = "http://127.0.0.1:11434"
	ollamaProbeTimeout = 500 * time.Millisecond
	modelsProbeTimeout = 2 * time.Second
)

// Detect decides which model endpoint to use from the environment.
//
// A model is configured when OPENAI_BASE_URL or OPENAI_API_KEY is set: the
// base URL defaults to OpenAI's, the model to OPENAI_MODEL, else gpt-4o-mini
// on OpenAI, else the first model the endpoint lists at GET /models (llama.cpp,
// vLLM and LM Studio list what they serve). Otherwise Detect asks an Ollama
// server on 127.0.0.1:11434 (GET /api/tags, 500 ms) and uses its OpenAI
// endpoint with OPENAI_MODEL or the first model it lists. When neither
// answers, ok is false and the server runs without a model. err reports a
// configuration that cannot work (a malformed URL, no model to pick).
// client nil means http.DefaultClient.
func Detect(ctx context.Context, getenv func(string) string, client *http.Client) (cfg Config, ok bool, err error) {
	return detect(ctx, getenv, client, ollamaURL)
}

func detect(ctx context.Context, getenv func(string) string, client *http.Client, ollama string) (Config, bool, error) {
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimSpace(getenv("OPENAI_BASE_URL"))
	key := strings.TrimSpace(getenv("OPENAI_API_KEY"))
	model := strings.TrimSpace(getenv("OPENAI_MODEL"))
	if base != "" || key != "" {
		if base == "" {
			base = openAIBaseURL
		}
		base = strings.TrimRight(base, "/")
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, false, fmt.Errorf("llm: detect: OPENAI_BASE_URL is not an http(s) URL")
		}
		cfg := Config{BaseURL: base, APIKey: key, Model: model, HTTPClient: client}
		if cfg.Model != "" {
			return cfg, true, nil
		}
		if base == openAIBaseURL {
			cfg.Model = openAIDefaultModel
			return cfg, true, nil
		}
		names, err := listModels(ctx, client, base+"/models", key)
		if err != nil || len(names) == 0 {
			if err == nil {
				err = fmt.Errorf("it lists none")
			}
			why := err.Error()
			return Config{}, false, fmt.Errorf("llm: detect: OPENAI_MODEL is not set and %s/models gave no model (%s)", safeURL(*u), newRedactor(key).apply(why))
		}
		cfg.Model = names[0]
		return cfg, true, nil
	}
	names, err := ollamaModels(ctx, client, ollama)
	if err != nil {
		return Config{}, false, nil // no Ollama: no model, not an error
	}
	if model == "" && len(names) > 0 {
		model = names[0]
	}
	if model == "" {
		return Config{}, false, nil // Ollama without a pulled model cannot chat
	}
	return Config{BaseURL: ollama + "/v1", Model: model, HTTPClient: client}, true, nil
}

// ollamaModels asks an Ollama server for its models.
func ollamaModels(ctx context.Context, client *http.Client, base string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ollamaProbeTimeout)
	defer cancel()
	var body struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if err := getJSON(ctx, client, base+"/api/tags", "", &body); err != nil {
		return nil, err
	}
	names := []string{}
	for _, m := range body.Models {
		if n := m.Name; n != "" {
			names = append(names, n)
		} else if m.Model != "" {
			names = append(names, m.Model)
		}
	}
	return names, nil
}

// listModels asks an OpenAI-compatible endpoint for its models.
func listModels(ctx context.Context, client *http.Client, u, key string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, modelsProbeTimeout)
	defer cancel()
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := getJSON(ctx, client, u, key, &body); err != nil {
		return nil, err
	}
	var names []string
	for _, m := range body.Data {
		if m.ID != "" {
			names = append(names, m.ID)
		}
	}
	return names, nil
}

// getJSON GETs u into v. Its errors do not quote u, which may hold
// secrets (a password, an api-key query); callers say what they asked.
func getJSON(ctx context.Context, client *http.Client, u, key string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}
