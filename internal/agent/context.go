package agent

import (
	"context"
	"encoding/json"
	"sync"
)

// DefaultContextWindow is the window of a model whose window nobody
// configured, the endpoint did not report and no refusal taught.
const DefaultContextWindow = 8192

// ContextSize is how full a conversation's context is: the prompt tokens of
// its last model call (as the model reported them, else estimated) and the
// window of the model.
type ContextSize struct {
	Tokens int `json:"tokens"`
	Window int `json:"window"`
	// Bytes is the raw size agentik estimated for that prompt (not on the
	// wire): with Tokens, the calibration a restarted process starts from.
	Bytes int `json:"-"`
}

// Windows knows the context window of each model. The model adapter
// implements it (explicit config, the endpoint's model list, what refusals
// taught); a providers file can feed it per model.
type Windows interface {
	// Window is the window of model ("" = the default model) in tokens; 0
	// when unknown (DefaultContextWindow is used).
	Window(ctx context.Context, model string) int
	// Learn records a window the model revealed by refusing a longer prompt.
	Learn(model string, tokens int)
}

// ContextExceeded is a model's refusal of a prompt longer than its window
// (OpenAI's context_length_exceeded, and the messages vLLM, llama.cpp and
// Ollama send). It wraps the model_error the caller reports.
type ContextExceeded struct {
	Err    *Error // model_error with the upstream message
	Window int    // the window the refusal named; 0 if it named none
	Prompt int    // the prompt tokens it named; 0 if it named none
}

func (e *ContextExceeded) Error() string { return e.Err.Error() }

// Unwrap makes errors.As find the model_error.
func (e *ContextExceeded) Unwrap() error { return e.Err }

// bytesPerToken is the estimate of an uncalibrated conversation: about four
// bytes of English or JSON per token for the usual BPE tokenizers.
const bytesPerToken = 4

// messageOverhead is what one message costs beyond its text (role, the
// chat template's markers), in bytes.
const messageOverhead = 16

// imageBytes is what an image counts as: about the 765 tokens of a
// 512×512 tile, not its base64 length.
const imageBytes = 3000

// estimator estimates prompt tokens, calibrated per conversation by the
// prompt_tokens the model reported for the last call: ratio = reported /
// raw estimate. Calibrations live in memory; after a restart a
// conversation starts uncalibrated (bytes/4) until its next call.
type estimator struct {
	mu    sync.Mutex
	ratio map[string]float64 // conversation id → calibration
}

func newEstimator() *estimator { return &estimator{ratio: map[string]float64{}} }

// rawBytes is the size of one memory entry as the model sees it, in bytes.
// Reasoning counts only where the adapter sends it back (after the last
// user message): withReasoning says so.
func rawBytes(m ModelMessage, withReasoning bool) int {
	n := messageOverhead + len(m.ToolCallID) + len(m.Name)
	for _, c := range m.Content {
		if c.Type == ContentImage {
			n += imageBytes
		} else {
			n += len(c.Body)
		}
	}
	if withReasoning {
		n += len(m.Reasoning)
	}
	for _, c := range m.ToolCalls {
		n += messageOverhead + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return n
}

// promptBytes is the raw size of a whole request: its messages and tools.
func promptBytes(mem []ModelMessage, specsBytes int) int {
	last := lastUser(mem)
	n := specsBytes
	for i, m := range mem {
		n += rawBytes(m, i > last)
	}
	return n
}

func specsBytes(specs []ToolSpec) int {
	if len(specs) == 0 {
		return 0
	}
	b, _ := json.Marshal(specs)
	return len(b)
}

// tokens converts raw bytes into calibrated tokens for conversation id.
func (e *estimator) tokens(id string, bytes int) int {
	e.mu.Lock()
	r := e.ratio[id]
	e.mu.Unlock()
	if r == 0 {
		r = 1
	}
	return int(float64(bytes)/bytesPerToken*r) + 1
}

// least is the smaller of the calibrated and the uncalibrated estimate of
// bytes: what a new conversation would estimate, unless this one's
// calibration says less.
func (e *estimator) least(id string, bytes int) int {
	return min(e.tokens(id, bytes), int(float64(bytes)/bytesPerToken)+1)
}

// bytes converts tokens into raw bytes for conversation id: the inverse
// of tokens.
func (e *estimator) bytes(id string, tokens int) int {
	e.mu.Lock()
	r := e.ratio[id]
	e.mu.Unlock()
	if r == 0 {
		r = 1
	}
	return int(float64(tokens) * bytesPerToken / r)
}

// calibrate records that a prompt of bytes raw bytes counted reported
// tokens. The ratio is clamped, so one odd report cannot make the budget
// absurd.
func (e *estimator) calibrate(id string, bytes, reported int) {
	if bytes <= 0 || reported <= 0 {
		return
	}
	r := float64(reported) / (float64(bytes) / bytesPerToken)
	r = min(max(r, 0.25), 4)
	e.mu.Lock()
	e.ratio[id] = r
	e.mu.Unlock()
}

// seed calibrates conversation c from its stored context size, unless it
// is calibrated already (the first turn after a restart).
func (e *estimator) seed(c Conversation) {
	if c.Context == nil || c.Context.Bytes <= 0 || c.Context.Tokens <= 0 {
		return
	}
	e.mu.Lock()
	_, ok := e.ratio[c.ID]
	e.mu.Unlock()
	if !ok {
		e.calibrate(c.ID, c.Context.Bytes, c.Context.Tokens)
	}
}

func (e *estimator) forget(id string) {
	e.mu.Lock()
	delete(e.ratio, id)
	e.mu.Unlock()
}

// lastUser is the index of the last user message of mem, or -1.
func lastUser(mem []ModelMessage) int {
	for i := len(mem) - 1; i >= 0; i-- {
		if mem[i].Role == RoleUser {
			return i
		}
	}
	return -1
}

// window is the window of model (a conversation's model id; "" = the
// default), never 0.
func (r *Runner) window(ctx context.Context, model string) int {
	if w := r.windows.Window(ctx, model); w > 0 {
		return w
	}
	return DefaultContextWindow
}

// reserve is what a window keeps free for the answer: a quarter of it,
// between 256 and 4096 tokens.
func reserve(window int) int { return min(max(window/4, 256), 4096) }

// contextParts are the estimated tokens of what every call of a turn
// carries: each is named when they do not fit the window together.
type contextParts struct {
	system, memory, message, tools, toolCount, answer int
}

// tooSmall is the error of a window that cannot hold the system prompt,
// the memory blocks and the current message (the tools are left out
// before this is said) with room for an answer: it names every part of
// the sum.
func tooSmall(window int, p contextParts) *Error {
	return Errorf(CodeModelError, "the model's context window (%d tokens) is smaller than the system prompt (about %d tokens) plus the memory blocks (about %d tokens) plus this message (about %d tokens) plus room for the answer (%d tokens), even with the %d tools' definitions (about %d tokens, the memory tools included) left out; send a shorter message or use a model with a larger window",
		window, p.system, p.memory, p.message, p.answer, p.toolCount, p.tools)
}

// exceededError is the error of a turn the model still refused after
// compacting harder and retrying.
func exceededError(window, tokens int, cause error) *Error {
	return Errorf(CodeModelError, "the conversation did not fit the model's context window (%d tokens) even after compacting it and retrying once (the prompt was about %d tokens); the model said: %v", window, tokens, cause)
}

// memWindows is the Windows of a runner configured without one: the
// default window, lowered by what refusals taught.
type memWindows struct {
	mu      sync.Mutex
	learned map[string]int
}

func (w *memWindows) Window(_ context.Context, model string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.learned[model]
}

func (w *memWindows) Learn(model string, tokens int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.learned == nil {
		w.learned = map[string]int{}
	}
	w.learned[model] = tokens
}
