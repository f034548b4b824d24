package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// A Server made WithWindow(n) behaves like a model with an n-token context
// window: it counts the prompt tokens of every chat request (PromptTokens) and
// refuses one whose prompt plus max_tokens passes n the way OpenAI does:
// 400 with code context_length_exceeded and "This model's maximum context
// length is n tokens. However, your messages resulted in m tokens." Its
// usage reports those prompt tokens. WithListedWindow(n) reports n as the
// context_length of its models in GET /v1/models and as
// model_info["llama.context_length"] in Ollama's POST /api/show.
// WithPromptOverhead(n) adds n tokens to every prompt it counts, like a
// chat template's built-in preamble: the reported usage is then far above
// agentik's estimate of a short prompt, not in proportion to its size.

// WithWindow makes the server enforce a context window of n tokens.
func WithWindow(n int) Option { return func(s *Server) { s.window = n } }

// WithListedWindow makes the server report a context window of n tokens.
func WithListedWindow(n int) Option { return func(s *Server) { s.listedWindow = n } }

// WithPromptOverhead makes the server count n more tokens in every prompt,
// in its refusals and its usage.
func WithPromptOverhead(n int) Option { return func(s *Server) { s.overhead = n } }

// PromptTokens is the server's count of the prompt tokens of req: the
// package's PromptTokens plus its prompt overhead.
func (s *Server) PromptTokens(req Request) int { return PromptTokens(req) + s.overhead }

// tokenBytes is the fake's tokenizer: one token per three bytes, a little
// denser than agentik's uncalibrated estimate (four), so calibration has
// something to learn.
const tokenBytes = 3

// messageTokens is what one message costs beyond its text.
const messageTokens = 4

// PromptTokens is the fake's count of the prompt tokens of req: its messages'
// text, reasoning, tool calls and names at one token per three bytes, four
// per message, and its tools.
func PromptTokens(req Request) int {
	n := 0
	for _, m := range req.Messages {
		b := len(m.Content) + len(m.ReasoningContent) + len(m.ToolCallID) + len(m.Name)
		for _, c := range m.ToolCalls {
			b += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
		n += messageTokens + (b+tokenBytes-1)/tokenBytes
	}
	for _, t := range req.Tools {
		n += (len(t.Name) + len(t.Description) + len(t.Parameters) + tokenBytes - 1) / tokenBytes
	}
	return n
}

// refuse answers a request that does not fit the window, and reports
// whether it did.
func (s *Server) refuse(w http.ResponseWriter, req Request) bool {
	if s.window <= 0 {
		return false
	}
	n := s.PromptTokens(req) + req.MaxTokens
	if n <= s.window {
		return false
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.window, n),
		"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
	}})
	return true
}

// show answers Ollama's POST /api/show.
func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	info := map[string]any{"general.architecture": "llama"}
	if s.listedWindow > 0 {
		info["llama.context_length"] = s.listedWindow
	}
	writeJSON(w, http.StatusOK, map[string]any{"model_info": info})
}
