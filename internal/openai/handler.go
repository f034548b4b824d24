// Package openai is the OpenAI-compatible facade (DESIGN §10.6, §11.4):
// GET /v1/models and POST /v1/chat/completions in OpenAI's shapes, so any
// OpenAI client can use agentik as a model that has agentik's tools. It
// is an http.Handler over the centre (the Runner's use cases and the
// broker's subscriptions) and answers errors in OpenAI's shape; the
// server mounts its routes (Routes) behind its middleware, which puts
// the caller's agent.Principal in the request's context.
//
// A request is stateless by default (a temp conversation seeded with its
// messages, deleted when the response ends, its turn interrupted if the
// client leaves first); with protocol.ConversationHeader it continues a
// stored conversation, whose turn every other client sees live and which
// a disconnect does not stop.
package openai

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/sse"
)

// Prefix is where the facade's routes live; errors under it take
// OpenAI's shape.
const Prefix = "/v1/"

// Owns reports whether a request path is the facade's: its errors, the
// middleware's included, take OpenAI's shape.
func Owns(path string) bool { return path == "/v1" || strings.HasPrefix(path, Prefix) }

// DefaultHeartbeat is how often an idle stream gets a comment line.
const DefaultHeartbeat = 15 * time.Second

// Config holds what the facade needs.
type Config struct {
	Runner *agent.Runner
	// Conversations reads the conversations and their history, and
	// changes their settings (the caller's permission).
	Conversations *agent.Conversations
	// Agents lists the agents the caller may use as models ("agent/<slug>").
	Agents *agent.Agents
	Broker *broker.Broker
	// ModelName is the default model's name, listed first ("" when no
	// model is configured).
	ModelName string
	// Streams ends the facade's streams on shutdown and waits for them;
	// nil: a group of the handler's own (Shutdown ends it).
	Streams *sse.Group
	// Heartbeat is how often an idle stream gets a comment line; default
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// Clock stamps the answers (created); nil: time.Now.
	Clock  func() time.Time
	Logger *slog.Logger
	// Responses keeps the ids of stored responses (the database); nil:
	// only store: false responses are served.
	Responses ResponseStore
	// Files serves /v1/files and /v1/vector_stores and Responses'
	// file_search (files.go); nil: unavailable.
	Files *agent.Files
}

// Handler serves the facade. It is an http.Handler.
type Handler struct {
	cfg     Config
	runner  *agent.Runner
	convs   *agent.Conversations
	broker  *broker.Broker
	log     *slog.Logger
	streams *sse.Group
	closing <-chan struct{}
	mux     *http.ServeMux
}

// New makes a Handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Streams == nil {
		cfg.Streams = sse.NewGroup()
	}
	h := &Handler{cfg: cfg, runner: cfg.Runner, convs: cfg.Conversations, broker: cfg.Broker, log: cfg.Logger,
		streams: cfg.Streams, closing: cfg.Streams.Closing(), mux: http.NewServeMux()}
	for pattern, hh := range h.Routes() {
		h.mux.Handle(pattern, hh)
	}
	return h
}

// ServeHTTP implements http.Handler: the facade's routes without any
// middleware (the server mounts Routes behind its own instead).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) now() time.Time { return h.cfg.Clock() }

// RequestIDHeader names each answer, as OpenAI's do (its SDKs expose it
// as request_id); the log of a failed request carries the same id.
const RequestIDHeader = "X-Request-Id"

// route wraps a route's handler: the answer gets its request id.
func (h *Handler) route(f http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestID(w)
		f(w, r)
	})
}

// requestID gives the answer an id unless it has one, and returns it.
func requestID(w http.ResponseWriter) string {
	id := w.Header().Get(RequestIDHeader)
	if id == "" {
		id = "req_" + agent.NewID()
		w.Header().Set(RequestIDHeader, id)
	}
	return id
}
