// Package a2a serves agentik's agents over the Agent2Agent protocol
// (A2A 1.0, its JSON-RPC and HTTP+JSON bindings as @a2a-js/sdk 1.x speaks
// them, and 0.3's JSON-RPC method names in 0.3's shapes): an agent card
// per agent, send and streaming send, get, list and cancel tasks, and
// subscribe to a task. It is a projection of the event log: a context is
// a conversation, a task is one of its turns (its id is derived from the
// conversation's id and the seq of the turn's first event), the answer is
// the task's artifact, a tool call waiting for approval is the
// input-required state. Everything goes through the Runner with the
// request's context, so the caller's principal decides what it may see.
package a2a

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/sse"
)

// ProtocolVersion is the A2A version served.
const ProtocolVersion = "1.0"

// CardPath is where the default agent's card is, and where an agent's
// card is under its base URL.
const CardPath = "/.well-known/agent-card.json"

// Prefix is where every agent's endpoint lives: /a2a/{slug}.
const Prefix = "/a2a/"

// FileURLPrefix begins the url of a file part naming a file of agentik's
// ("agentik:file/file-…"): task history names attached files so, and a
// message may attach a file of the sender's so.
const FileURLPrefix = "agentik:file/"

// DefaultHeartbeat is how often an idle stream gets a comment line.
const DefaultHeartbeat = 15 * time.Second

// Agent is what A2A shows of one of agentik's agents.
type Agent struct {
	Slug        string
	Name        string
	Description string
	Starters    []string // suggested first prompts: the skill's examples
}

// Config holds what the handler needs.
type Config struct {
	Runner *agent.Runner
	// Conversations reads the conversations and their history (the
	// caller's permission, agent/conversations.go).
	Conversations *agent.Conversations
	Broker        *broker.Broker
	// Agents lists the agents the caller (the principal in ctx) may use,
	// the default agent first.
	Agents func(ctx context.Context) ([]Agent, error)
	// Default is the default agent, whose card is public at CardPath
	// (ctx carries no principal: the card is fetched before a key).
	Default func(ctx context.Context) Agent
	// KV keeps push notification configs (the database); nil: push
	// notifications are not served.
	KV KV
	// PushAllow opens internal addresses to pushes (AGENTIK_PUSH_ALLOW,
	// pushnet.go).
	PushAllow PushAllow
	// SecretKey (AGENTIK_SECRET_KEY) derives the push signing key; "": one
	// made once and kept in KV (pushkey.go).
	SecretKey string
	// Auth says that requests need a key: the cards name the bearer scheme.
	Auth      bool
	Heartbeat time.Duration // DefaultHeartbeat when 0
	// Streams holds the long-lived streams: its Closing ends them at
	// shutdown, which waits for them. nil: a group of the handler's own.
	Streams *sse.Group
	Logger  *slog.Logger
	// Version is agentik's version, shown in the cards.
	Version string
}

// Handler is the A2A surface; Routes lists its routes (CardPath and
// everything under Prefix).
type Handler struct {
	cfg Config
	log *slog.Logger
	// late, set by a running PushDeliverer, is told of a push config
	// stored with its send: the task may have settled before it was.
	late atomic.Pointer[func(taskID string)]
	// tell passes such a config on to the deliverer of another instance
	// (TellLate): one instance delivers on a shared database.
	tell atomic.Pointer[func(taskID string)]

	keyMu sync.Mutex
	key   *pushSigner // pushkey.go
}

// New makes a Handler.
func New(cfg Config) *Handler {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Streams == nil {
		cfg.Streams = sse.NewGroup()
	}
	return &Handler{cfg: cfg, log: cfg.Logger}
}

// TellLate sets how a push config stored after its send started is told
// to the PushDeliverer of the other instances sharing the database (the
// app broadcasts it): the one that delivers may be another's. There,
// LateConfig hands it to a running deliverer.
func (h *Handler) TellLate(f func(taskID string)) { h.tell.Store(&f) }

// LateConfig tells this instance's running PushDeliverer, if any, that
// task id's push config was stored after its send started (another
// instance's send: TellLate).
func (h *Handler) LateConfig(taskID string) {
	if late := h.late.Load(); late != nil {
		(*late)(taskID)
	}
}

// Routes is the A2A surface: pattern → handler, for the server's mux.
func (h *Handler) Routes() map[string]http.Handler {
	routes := map[string]http.Handler{
		"GET " + CardPath:                     http.HandlerFunc(h.handleDefaultCard),
		"GET " + Prefix + "{slug}" + CardPath: http.HandlerFunc(h.handleCard),
		"POST " + Prefix + "{slug}":           http.HandlerFunc(h.handleRPC),
		"GET " + PushKeysPath:                 http.HandlerFunc(h.handlePushKeys),
		Prefix:                                http.HandlerFunc(h.handleNoRoute),
	}
	for p, r := range h.restRoutes() {
		routes[p] = r
	}
	return routes
}

// baseURL is the scheme and host the caller reached agentik at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// card is an agent's card as the caller reaches it.
func (h *Handler) card(r *http.Request, a Agent) Card {
	desc := a.Description
	if desc == "" {
		desc = "An agentik agent: it answers with the tools agentik has."
	}
	url := baseURL(r) + Prefix + a.Slug
	c := Card{
		Name:        a.Name,
		Description: desc,
		// One base URL serves both bindings, and 0.3's method names.
		SupportedInterfaces: []Interface{
			{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: ProtocolVersion},
			{URL: url, ProtocolBinding: "HTTP+JSON", ProtocolVersion: ProtocolVersion},
			{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: v03Version},
		},
		// What an A2A 0.3 client reads of the same card.
		V03Version: v03Version + ".0", V03URL: url, V03Transport: "JSONRPC",
		V03Interfaces:      []V03Interface{{URL: url, Transport: "JSONRPC"}},
		Provider:           &Provider{Organization: "agentik", URL: baseURL(r)},
		Version:            h.cfg.Version,
		Capabilities:       Capabilities{Streaming: true, PushNotifications: h.cfg.KV != nil},
		DefaultInputModes:  []string{"text/plain", "image/png", "image/jpeg", "image/gif", "image/webp", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []Skill{{
			ID: a.Slug, Name: a.Name, Description: desc, Tags: []string{"agentik", a.Slug}, Examples: a.Starters,
		}},
	}
	if h.cfg.Auth {
		const keyHelp = "an agentik API key (AGENTIK_API_KEYS, or a user's key) as Authorization: Bearer <key>"
		// The scheme in 1.0's shape and 0.3's (SecurityScheme): with the
		// 0.3 type beside it, @a2a-js/sdk 1.x keeps the card as served
		// instead of parsing it as protobuf JSON, which its client reads
		// the same.
		c.SecuritySchemes = map[string]SecurityScheme{"bearer": {HTTPAuth: &HTTPAuthScheme{Scheme: "Bearer", Description: keyHelp},
			V03Type: "http", V03Scheme: "bearer", V03Description: keyHelp}}
		c.SecurityRequirements = []SecurityRequirement{{Schemes: map[string]StringList{"bearer": {List: []string{}}}}}
		c.V03Security = []map[string][]string{{"bearer": {}}}
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// handleDefaultCard serves the default agent's card. It is public (A2A
// clients discover an agent before they authenticate): it shows only the
// default agent's name, description and starters, its URL, and that a
// key is needed.
func (h *Handler) handleDefaultCard(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.card(r, h.cfg.Default(r.Context())))
}

// agentOf finds the agent of the path among those the caller may use.
func (h *Handler) agentOf(r *http.Request) (Agent, error) {
	slug := r.PathValue("slug")
	as, err := h.cfg.Agents(r.Context())
	if err != nil {
		return Agent{}, err
	}
	var names []string
	for _, a := range as {
		if a.Slug == slug {
			return a, nil
		}
		names = append(names, a.Slug)
	}
	return Agent{}, agent.Errorf(agent.CodeNotFound, "no agent %q here; the agents you may use are: %s", agent.Shorten(slug, 60), strings.Join(names, ", "))
}

func (h *Handler) handleCard(w http.ResponseWriter, r *http.Request) {
	a, err := h.agentOf(r)
	if err != nil {
		writeJSON(w, httpStatus(err), agentError(err))
		return
	}
	writeJSON(w, http.StatusOK, h.card(r, a))
}

func (h *Handler) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, agentError(agent.Errorf(agent.CodeNotFound,
		"no A2A route %s %s: an agent's JSON-RPC endpoint is POST %s{slug}, its REST binding under %s{slug}/ (message:send, tasks/{id}, …), its card GET %s{slug}%s", r.Method, r.URL.Path, Prefix, Prefix, Prefix, CardPath)))
}

// agentError is agentik's error body, for the routes that are not
// JSON-RPC (the cards).
func agentError(err error) map[string]any {
	var e *agent.Error
	if !errors.As(err, &e) {
		e = &agent.Error{Code: agent.CodeInternal, Message: "internal error"}
	}
	return map[string]any{"error": e}
}

func httpStatus(err error) int {
	switch agent.ErrorCode(err) {
	case agent.CodeNotFound:
		return http.StatusNotFound
	case agent.CodeBadRequest:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// content turns a message's parts into agentik content: text parts as
// text, images as images, data parts as their JSON text, other files as
// file parts (unnamed text and JSON bytes as text).
func content(m *Message) ([]agent.Content, error) {
	var out []agent.Content
	for i, p := range m.Parts {
		switch {
		case p.Text != nil:
			out = append(out, agent.Text(*p.Text))
		case len(p.Data) > 0:
			out = append(out, agent.Text(string(p.Data)))
		case len(p.Raw) > 0 && strings.HasPrefix(p.MediaType, "image/"):
			out = append(out, agent.Content{Type: agent.ContentImage, Mime: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Raw)})
		case len(p.Raw) > 0 && p.Filename == "" && (strings.HasPrefix(p.MediaType, "text/") || p.MediaType == "application/json"):
			out = append(out, agent.Text(string(p.Raw)))
		case len(p.Raw) > 0:
			// A document (a named file, or not text): the centre stores it
			// as a file of the sender's and gives the model its text (agent
			// filepart.go); a type it cannot read is refused there.
			name := p.Filename
			if name == "" {
				name = "attachment"
			}
			out = append(out, agent.Content{Type: agent.ContentFile, Name: name, Mime: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Raw)})
		case strings.HasPrefix(p.URL, FileURLPrefix):
			// A file of agentik's, as task history names them: the centre
			// checks the sender may read it (not_found else).
			id := strings.TrimPrefix(p.URL, FileURLPrefix)
			if id == "" {
				return nil, rpcErr(codeInvalidParams, "message.parts[%d].url %q names no file: %s<file id>", i, p.URL, FileURLPrefix)
			}
			out = append(out, agent.Content{Type: agent.ContentFile, FileID: id})
		case p.URL != "":
			return nil, rpcErr(codeContentType, "message.parts[%d] is a url part; agentik fetches no URL a message names: send the file's bytes (raw, or file.bytes in 0.3) with its mediaType and filename, or name a file of yours as %s<file id>", i, FileURLPrefix)
		default:
			return nil, rpcErr(codeInvalidParams, "message.parts[%d] is empty: set text, raw, url or data", i)
		}
	}
	if len(out) == 0 {
		return nil, rpcErr(codeInvalidParams, "message.parts is empty: send at least one part")
	}
	if err := agent.CheckContent(out); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// readBody reads a request body within the server's limit.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, rpcErr(codeInvalidRequest, "the request body is over %d bytes", mb.Limit)
		}
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}
