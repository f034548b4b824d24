package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// discoverTimeout bounds the look-up of a model's window at the endpoint.
const discoverTimeout = 3 * time.Second

// Windows knows the context window of each model of one endpoint
// (agent.Windows), in this order: what a refusal taught (when lower than
// the rest), the window set for the model (Set: AGENTIK_CONTEXT_WINDOW, a
// providers file), what the endpoint reports (/v1/models fields
// context_length, context_window, max_model_len; else Ollama's /api/show
// model_info *.context_length), else 0 (the runner's default). The
// endpoint is asked once per model, on first use. Safe for concurrent use.
type Windows struct {
	cfg      Config
	fallback int // the window of every model without its own; 0 none

	mu         sync.Mutex
	set        map[string]int // explicit, per model
	learned    map[string]int
	discovered map[string]int // -1: asked, nothing found
}

var _ agent.Windows = (*Windows)(nil)

// NewWindows makes the Windows of the endpoint of cfg. explicit (> 0) is
// the window of every model that has none set (AGENTIK_CONTEXT_WINDOW).
func NewWindows(cfg Config, explicit int) *Windows {
	return &Windows{cfg: cfg, fallback: explicit, set: map[string]int{}, learned: map[string]int{}, discovered: map[string]int{}}
}

// Set fixes the window of model (a providers file's context_window).
func (w *Windows) Set(model string, tokens int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.set[model] = tokens
}

// Learn records the window a refusal revealed.
func (w *Windows) Learn(model string, tokens int) {
	if model == "" {
		model = w.cfg.Model
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.learned[model] = tokens
}

// Window is the window of model ("" = the configured model), or 0.
func (w *Windows) Window(ctx context.Context, model string) int {
	if model == "" {
		model = w.cfg.Model
	}
	w.mu.Lock()
	known := w.set[model]
	if known == 0 {
		known = w.fallback
	}
	learned := w.learned[model]
	found, asked := w.discovered[model]
	w.mu.Unlock()
	if known == 0 {
		if !asked {
			found = w.discover(ctx, model)
			w.mu.Lock()
			w.discovered[model] = found
			w.mu.Unlock()
		}
		known = max(found, 0)
	}
	if learned > 0 && (known == 0 || learned < known) {
		return learned
	}
	return known
}

// Known is the window Window would answer for model without asking the
// endpoint: 0 when it is not known yet.
func (w *Windows) Known(model string) int {
	if model == "" {
		model = w.cfg.Model
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	known := w.set[model]
	if known == 0 {
		known = w.fallback
	}
	if known == 0 {
		known = max(w.discovered[model], 0)
	}
	if l := w.learned[model]; l > 0 && (known == 0 || l < known) {
		return l
	}
	return known
}

// discover asks the endpoint for model's window; -1 when it does not say.
func (w *Windows) discover(ctx context.Context, model string) int {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	base := strings.TrimRight(strings.TrimSpace(w.cfg.BaseURL), "/")
	if base == "" {
		base = openAIBaseURL
	}
	var list struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if w.get(ctx, http.MethodGet, base+"/models", nil, &list) {
		for _, m := range list.Data {
			var id string
			_ = json.Unmarshal(m["id"], &id)
			if id != model && id != model+":latest" {
				continue
			}
			for _, k := range []string{"context_length", "context_window", "max_model_len"} {
				if n := positive(m[k]); n > 0 {
					return n
				}
			}
		}
	}
	var show struct {
		ModelInfo map[string]json.RawMessage `json:"model_info"`
	}
	body, _ := json.Marshal(map[string]string{"model": model})
	if w.get(ctx, http.MethodPost, strings.TrimSuffix(base, "/v1")+"/api/show", body, &show) {
		for k, v := range show.ModelInfo {
			if strings.HasSuffix(k, ".context_length") {
				if n := positive(v); n > 0 {
					return n
				}
			}
		}
	}
	return -1
}

// get requests url and decodes a 200 JSON answer into v.
func (w *Windows) get(ctx context.Context, method, url string, body []byte, v any) bool {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return false
	}
	if w.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.APIKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := w.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v) == nil
}

func positive(raw json.RawMessage) int {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || f < 1 || f > 1<<31 {
		return 0
	}
	return int(f)
}

// The refusals of a prompt longer than the window, as the usual servers
// word them: OpenAI and vLLM ("maximum context length is 8192 tokens …
// resulted in 9000 tokens"), llama.cpp ("the request exceeds the available
// context size", "(9000 tokens) exceeds the available context size (8192
// tokens)"), Ollama and others ("context window", "exceeds the context
// length").
var (
	exceededText = regexp.MustCompile(`(?i)maximum context length|context window|exceeds? the (available )?context|context_length_exceeded|context length exceeded|prompt is too long|too many tokens`)
	windowNumber = []*regexp.Regexp{
		regexp.MustCompile(`(?i)maximum context length is (\d+)`),
		regexp.MustCompile(`(?i)context (?:size|length|window)(?: of| is)? \(?(\d+)`),
	}
	promptNumber = []*regexp.Regexp{
		regexp.MustCompile(`(?i)resulted in (\d+) tokens`),
		regexp.MustCompile(`(?i)requested (\d+) tokens`),
		regexp.MustCompile(`(?i)\((\d+) tokens\) exceeds`),
	}
)

// contextExceeded returns the refusal err is, if it is one, wrapping merr.
func contextExceeded(err error, merr *agent.Error) *agent.ContextExceeded {
	var apiErr *openai.APIError
	code, msg := "", ""
	if errors.As(err, &apiErr) {
		msg = apiErr.Message
		if s, ok := apiErr.Code.(string); ok {
			code = s
		}
	} else {
		var reqErr *openai.RequestError
		if !errors.As(err, &reqErr) {
			return nil
		}
		msg = string(reqErr.Body)
	}
	if code != "context_length_exceeded" && !exceededText.MatchString(msg) {
		return nil
	}
	return &agent.ContextExceeded{Err: merr, Window: firstNumber(windowNumber, msg), Prompt: firstNumber(promptNumber, msg)}
}

func firstNumber(res []*regexp.Regexp, s string) int {
	for _, re := range res {
		if m := re.FindStringSubmatch(s); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return n
			}
		}
	}
	return 0
}
