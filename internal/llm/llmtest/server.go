package llmtest

import (
	"github.com/agentik/agentik/internal/llm/demo"

	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxBody caps a request body (images travel inline as base64).
const maxBody = 64 << 20

// Server is a fake OpenAI-compatible endpoint. It serves
// POST /v1/chat/completions (and /chat/completions), GET /v1/models (and
// /models) and Ollama's GET /api/tags. Each chat request consumes the next
// enqueued Reply, or, when none is queued, the reply the directives of the
// last user message describe (see the package doc). It is safe for
// concurrent use.
type Server struct {
	models       []string
	apiKey       string
	script       func(Request) Reply // nil: derive from directives
	window       int                 // refuse longer prompts (window.go); 0: no limit
	listedWindow int                 // reported by /v1/models and /api/show; 0: none
	strict       bool                // refuse unpaired tool calls and results (strict.go)
	overhead     int                 // tokens added to every prompt's count (window.go)

	mu    sync.Mutex
	queue []Reply
	reqs  []Request
	ids   int // tool call ids handed out
	// embedFail answers /v1/embeddings with a 500 while set; embeds
	// counts the embedding requests answered.
	embedFail bool
	embeds    int
	// embedHold, while set, holds every /v1/embeddings request until it
	// is closed; embedHeld is told (without blocking) of each one held.
	embedHold chan struct{}
	embedHeld chan struct{}
}

// HoldEmbeddings holds every /v1/embeddings request until release is
// called; held receives once a request is being held.
func (s *Server) HoldEmbeddings() (held <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hold, h := make(chan struct{}), make(chan struct{}, 1)
	s.embedHold, s.embedHeld = hold, h
	var once sync.Once
	return h, func() {
		once.Do(func() {
			s.mu.Lock()
			s.embedHold = nil
			s.mu.Unlock()
			close(hold)
		})
	}
}

// FailEmbeddings makes /v1/embeddings answer 500 (on) or embeddings
// again (off): an embedding endpoint that fails.
func (s *Server) FailEmbeddings(on bool) {
	s.mu.Lock()
	s.embedFail = on
	s.mu.Unlock()
}

// Embeddings is how many /v1/embeddings requests were answered.
func (s *Server) Embeddings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embeds
}

// embeddingsOK answers 500 when FailEmbeddings is on, waits while
// HoldEmbeddings holds, and counts.
func (s *Server) embeddingsOK(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	hold, held := s.embedHold, s.embedHeld
	s.mu.Unlock()
	if hold != nil {
		select {
		case held <- struct{}{}:
		default:
		}
		select {
		case <-hold:
		case <-r.Context().Done():
			return false
		}
	}
	s.mu.Lock()
	fail := s.embedFail
	if !fail {
		s.embeds++
	}
	s.mu.Unlock()
	if fail {
		writeError(w, http.StatusInternalServerError, "llmtest: embeddings fail as asked", 0)
		return false
	}
	return true
}

// Option configures a Server.
type Option func(*Server)

// WithModels sets the models the server lists (default "fake-model"); the
// first is the model of every reply.
func WithModels(names ...string) Option {
	return func(s *Server) { s.models = append([]string(nil), names...) }
}

// WithAPIKey makes the server answer 401 to requests without
// "Authorization: Bearer key".
func WithAPIKey(key string) Option {
	return func(s *Server) { s.apiKey = key }
}

// NewServer makes a Server; serve it with httptest or http.Server.
func NewServer(opts ...Option) *Server {
	s := &Server{models: []string{"fake-model"}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewHTTPServer starts a Server on a random local port, closed when the
// test ends, and returns it with its base URL (ending in /v1), ready for
// llm.Config.BaseURL or OPENAI_BASE_URL.
func NewHTTPServer(t testing.TB, opts ...Option) (*Server, string) {
	t.Helper()
	s := NewServer(opts...)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL + "/v1"
}

// Enqueue adds a scripted reply; replies are consumed in order, one per
// chat request.
func (s *Server) Enqueue(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r)
}

// Pending is the number of enqueued replies not yet consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the chat requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case path == "/chat/completions" && r.Method == http.MethodPost:
		if s.authorized(w, r) {
			s.chat(w, r)
		}
	case path == "/models" && r.Method == http.MethodGet:
		if s.authorized(w, r) {
			s.listModels(w)
		}
	case path == "/embeddings" && r.Method == http.MethodPost:
		if s.authorized(w, r) && s.embeddingsOK(w, r) {
			demo.ServeEmbeddings(w, r) // deterministic: texts that share words are near
		}
	case r.URL.Path == "/api/tags" && r.Method == http.MethodGet:
		s.tags(w)
	case r.URL.Path == "/api/show" && r.Method == http.MethodPost:
		s.show(w, r)
	default:
		writeError(w, http.StatusNotFound, "llmtest: no route "+r.Method+" "+r.URL.Path, 0)
	}
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.apiKey == "" || r.Header.Get("Authorization") == "Bearer "+s.apiKey {
		return true
	}
	writeError(w, http.StatusUnauthorized, "Incorrect API key provided", 0)
	return false
}

func (s *Server) listModels(w http.ResponseWriter) {
	type model struct {
		ID            string `json:"id"`
		Object        string `json:"object"`
		OwnedBy       string `json:"owned_by"`
		ContextLength int    `json:"context_length,omitempty"`
	}
	body := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range s.models {
		body.Data = append(body.Data, model{m, "model", "llmtest", s.listedWindow})
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) tags(w http.ResponseWriter) {
	type model struct {
		Name  string `json:"name"`
		Model string `json:"model"`
	}
	body := struct {
		Models []model `json:"models"`
	}{Models: []model{}}
	for _, m := range s.models {
		body.Models = append(body.Models, model{m, m})
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: read body: "+err.Error(), 0)
		return
	}
	req, err := decodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: "+err.Error(), 0)
		return
	}
	req.Path = r.URL.Path
	req.Header = r.Header.Clone()

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	if s.refuse(w, req) || s.refuseUnpaired(w, req) {
		s.mu.Unlock()
		return
	}
	var reply Reply
	if len(s.queue) > 0 {
		reply = s.queue[0]
		s.queue = s.queue[1:]
	} else if s.script != nil {
		reply = s.script(req)
	} else {
		reply = derive(req)
	}
	for i := range reply.ToolCalls {
		if reply.ToolCalls[i].ID == "" {
			s.ids++
			reply.ToolCalls[i].ID = "call_" + strconv.Itoa(s.ids)
		}
	}
	s.mu.Unlock()

	if reply.Wait > 0 {
		t := time.NewTimer(reply.Wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, msg, reply.RetryAfter)
		return
	}
	model := req.Model
	if model == "" {
		model = s.models[0]
	}
	p := plan(reply, req)
	if s.window > 0 && reply.Usage == nil {
		p.usage.PromptTokens = s.PromptTokens(req)
		p.usage.TotalTokens = p.usage.PromptTokens + p.usage.CompletionTokens
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, p.completion(model))
		return
	}
	p.stream(w, r, model, reply, req.IncludeUsage)
}

// writeError answers with an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	}
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": strconv.Itoa(status),
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// split cuts s into chunks of size runes, or word by word (each chunk is
// a word with the whitespace before it) when size is 0.
func split(s string, size int) []string {
	var out []string
	if size > 0 {
		for s != "" {
			n, i := 0, 0
			for i < len(s) && n < size {
				_, w := utf8.DecodeRuneInString(s[i:])
				i += w
				n++
			}
			out = append(out, s[:i])
			s = s[i:]
		}
		return out
	}
	start := 0
	prevSpace := true
	for i, r := range s {
		space := unicode.IsSpace(r)
		if space && !prevSpace && i > start {
			out = append(out, s[start:i])
			start = i
		}
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// countWords is the fake's token count.
func countWords(s string) int { return len(strings.Fields(s)) }
