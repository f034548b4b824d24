package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentik/agentik/internal/agent"
)

// Defaults of Config.
const (
	// DefaultTimeout caps one whole Chat call, retries included.
	DefaultTimeout = 10 * time.Minute
	// DefaultIdleTimeout is how long a call may wait for the first byte of
	// an answer, or between two reads of its stream, before it fails.
	DefaultIdleTimeout = 60 * time.Second
)

// Retry policy before the first delta of an answer.
const (
	maxAttempts = 3
	retryBudget = 10 * time.Second
	retryBase   = 500 * time.Millisecond
)

// Config selects and tunes a model endpoint.
type Config struct {
	// BaseURL is the OpenAI-compatible API root, e.g. https://api.openai.com/v1
	// or http://127.0.0.1:11434/v1.
	BaseURL string
	// APIKey is sent as a bearer token when set. It never appears in logs
	// or errors.
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// Timeout caps a whole Chat call; zero means DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout caps the wait for the first byte and between reads of a
	// stream; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HTTPClient is used for every request; nil means a new http.Client.
	// Its own Timeout should stay zero: streams are long.
	HTTPClient *http.Client
	// Logger receives retries and failures; nil discards.
	Logger *slog.Logger
	// Continue is how a cut-off answer is continued (agent.ChatRequest's
	// Continue): ContinueInstruction (""), or ContinuePrefix for servers
	// that continue a final assistant message (vLLM, SGLang, llama.cpp).
	Continue string
}

// Ways to continue a cut-off answer (Config.Continue).
const (
	// ContinueInstruction sends the kept answer as an assistant message
	// followed by a user message asking to go on without repeating: any
	// chat endpoint understands it (OpenAI's has no prefix continuation).
	ContinueInstruction = "instruction"
	// ContinuePrefix sends the kept answer as the final assistant message
	// with continue_final_message: true and add_generation_prompt: false
	// (vLLM's and SGLang's request options; llama.cpp's server continues
	// a final assistant message by itself): the model's next token follows
	// the kept text's last.
	ContinuePrefix = "prefix"
)

// ParseContinue checks a Config.Continue value ("" is
// ContinueInstruction).
func ParseContinue(v string) (string, error) {
	switch v {
	case "", ContinueInstruction, ContinuePrefix:
		return v, nil
	}
	return "", fmt.Errorf("must be %s or %s, got %q", ContinueInstruction, ContinuePrefix, v)
}

// LogValue implements slog.LogValuer: the API key is never logged, only
// whether one is set.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("model", c.Model),
		slog.Bool("api_key_set", c.APIKey != ""),
	)
}

// String keeps the API key out of fmt output.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{BaseURL: %q, Model: %q, APIKey set: %v}", c.BaseURL, c.Model, c.APIKey != "")
}

// Model is an agent.Model over an OpenAI-compatible chat completions
// endpoint. It is safe for concurrent use.
type Model struct {
	client  *openai.Client
	model   string
	timeout time.Duration
	idle    time.Duration
	log     *slog.Logger
	redact  redactor
	retry   retryPolicy
	cont    string // Config.Continue
}

var _ agent.Model = (*Model)(nil)

// retryPolicy says how often and how long Chat retries before the first
// delta. Tests shrink it.
type retryPolicy struct {
	attempts int
	budget   time.Duration
	base     time.Duration
}

// New makes a Model from cfg. It does no I/O.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("llm: new: no model name (set OPENAI_MODEL)")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = openAIBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: new: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = doer{hc}
	// Comment lines (keep-alives) count as "empty messages" in go-openai;
	// liveness is our idle timer's job, so the limit only guards garbage.
	oc.EmptyMessagesLimit = 100000
	return &Model{
		client:  openai.NewClientWithConfig(oc),
		model:   cfg.Model,
		timeout: cfg.Timeout,
		idle:    cfg.IdleTimeout,
		log:     logger,
		redact:  newRedactor(cfg.APIKey),
		retry:   retryPolicy{attempts: maxAttempts, budget: retryBudget, base: retryBase},
		cont:    cfg.Continue,
	}, nil
}

// Name is the model name sent with every request.
func (m *Model) Name() string { return m.model }

// named is m sending model name instead: the same client and policies.
func (m *Model) named(name string) *Model {
	c := *m
	c.model = name
	return &c
}

// Errors that end a call without the caller's ctx being done.
var (
	errCallTimeout = errors.New("call timeout")
	errIdleTimeout = errors.New("idle timeout")
)

// callbackError carries the error of the caller's on func through the
// stream loop, so Chat returns it unchanged.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// Chat streams one chat completion. It calls on for every reasoning or text
// delta in arrival order and returns the whole answer once the stream ends.
// Before the first delta it retries 429, 5xx and connection failures (at
// most 3 attempts within 10 s); after it, a failure ends the call with the
// partial response and a model_error. A done ctx returns ctx.Err() with
// what arrived so far.
func (m *Model) Chat(ctx context.Context, req agent.ChatRequest, on func(agent.Delta) error) (agent.ChatResponse, error) {
	if on == nil {
		on = func(agent.Delta) error { return nil }
	}
	oreq, extra := m.request(req), m.continuation(req)
	callCtx, cancel := context.WithTimeoutCause(ctx, m.timeout, errCallTimeout)
	defer cancel()
	start := time.Now()
	m.log.Debug("model_call", "model", m.model, "messages", len(oreq.Messages), "tools", len(oreq.Tools))
	for attempt := 1; ; attempt++ {
		acc := newAccumulator()
		info, err := m.attempt(callCtx, oreq, extra, acc, on)
		resp := acc.response()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		var cbErr callbackError
		if errors.As(err, &cbErr) {
			return resp, cbErr.err
		}
		merr := m.modelError(callCtx, err)
		if ce := contextExceeded(err, merr); ce != nil && !acc.emitted {
			return resp, ce
		}
		if acc.emitted || !retryable(err) || attempt >= m.retry.attempts {
			return resp, merr
		}
		wait, ok := m.retry.wait(attempt, info.retryAfter, m.retry.budget-time.Since(start))
		if !ok {
			return resp, merr
		}
		m.log.Warn("model_retry", "model", m.model, "attempt", attempt, "wait", wait, "error", merr.Message)
		t := time.NewTimer(wait)
		select {
		case <-callCtx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return resp, ctx.Err()
			}
			return resp, merr
		case <-t.C:
		}
	}
}

// attempt runs one HTTP request and reads its stream into acc.
func (m *Model) attempt(ctx context.Context, oreq openai.ChatCompletionRequest, extra map[string]any, acc *accumulator, on func(agent.Delta) error) (*attemptInfo, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := watchIdle(m.idle, func() { cancel(errIdleTimeout) })
	defer idle.stop()
	info := &attemptInfo{touch: idle.touch, extra: extra}
	ctx = context.WithValue(ctx, attemptKey{}, info)

	// A failure caused by the idle timer reads as such, not as the
	// "context canceled" it surfaces as.
	fail := func(err error) (*attemptInfo, error) {
		var cbErr callbackError
		if err != nil && !errors.As(err, &cbErr) && errors.Is(context.Cause(ctx), errIdleTimeout) {
			return info, errIdleTimeout
		}
		return info, err
	}
	stream, err := m.client.CreateChatCompletionStream(ctx, oreq)
	if err != nil {
		return fail(err)
	}
	defer stream.Close()
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			// go-openai reports [DONE] and a bare EOF alike; a stream
			// is complete when a choice carried a finish_reason.
			if !acc.finished {
				return fail(errStreamCut)
			}
			return fail(acc.flush(on))
		}
		if err != nil {
			return fail(err)
		}
		if err := acc.add(raw, on); err != nil {
			return fail(err)
		}
	}
}

// idleWatch calls fire once idle has passed without a touch. A touch (a
// read that got bytes, one or more per streamed token) is an atomic
// store; the one timer, when it fires, waits out the rest of idle since
// the last touch instead of being reset by every read (each Reset is a
// runtime timer's update).
type idleWatch struct {
	idle    time.Duration
	fire    func()
	last    atomic.Int64 // monoNow of the last touch
	mu      sync.Mutex
	timer   *time.Timer // mu
	stopped bool        // mu
}

func watchIdle(idle time.Duration, fire func()) *idleWatch {
	w := &idleWatch{idle: idle, fire: fire}
	w.touch()
	w.mu.Lock()
	w.timer = time.AfterFunc(idle, w.check)
	w.mu.Unlock()
	return w
}

func (w *idleWatch) touch() { w.last.Store(monoNow()) }

func (w *idleWatch) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	if wait := w.idle - time.Duration(monoNow()-w.last.Load()); wait > 0 {
		w.timer.Reset(wait)
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	w.fire()
}

func (w *idleWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
}

// monoBase anchors monoNow.
var monoBase = time.Now()

// monoNow is a monotonic instant in nanoseconds.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// attemptKey keys the *attemptInfo of a request in its context.
type attemptKey struct{}

// attemptInfo is what doer learns about one HTTP exchange.
type attemptInfo struct {
	touch      func() // resets the idle timer
	retryAfter string // Retry-After of a failed response
	// extra are top-level fields doer adds to the request's JSON body:
	// the options go-openai has no field for (continuation.go).
	extra map[string]any
}

// doer is go-openai's HTTP client: it records Retry-After and feeds the
// idle timer with every read of the response body.
type doer struct{ c *http.Client }

func (d doer) Do(r *http.Request) (*http.Response, error) {
	info, _ := r.Context().Value(attemptKey{}).(*attemptInfo)
	if info != nil && len(info.extra) > 0 {
		if err := withFields(r, info.extra); err != nil {
			return nil, err
		}
	}
	resp, err := d.c.Do(r)
	if err != nil || info == nil {
		return resp, err
	}
	info.touch()
	if resp.StatusCode >= 400 {
		info.retryAfter = resp.Header.Get("Retry-After")
	}
	resp.Body = touchBody{resp.Body, info.touch}
	return resp, nil
}

// touchBody calls touch after every read that returned bytes.
type touchBody struct {
	io.ReadCloser
	touch func()
}

func (b touchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.touch()
	}
	return n, err
}
