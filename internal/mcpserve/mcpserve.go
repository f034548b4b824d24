// Package mcpserve serves agentik's agents as an MCP server over
// streamable HTTP (mcp-go's server): one tool per agent the caller may use
// (ask_<slug>: message, optional conversation_id), progress notifications
// carrying the streamed text while the turn runs, cancellation as an
// interrupt, and the caller's conversations as resources with their
// transcript. A tool call that needs approval elicits the MCP client when
// it declared elicitation, else waits for a decision from the UI (bounded
// by the runner's approval timeout). Everything goes through the Runner
// with the request's context, so the caller's principal decides what it
// may see.
package mcpserve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/sse"
)

// Path is where the server is mounted.
const Path = "/mcp"

// toolPrefix names an agent's tool: ask_<slug>.
const toolPrefix = "ask_"

// resourcePrefix is the URI of a conversation's transcript, before its id.
const resourcePrefix = "agentik://conversations/"

// knowledgePrefix starts a knowledge base's resource URI (knowledge.go).
const knowledgePrefix = "agentik://knowledge/"

// maxResources caps the conversations one resources/list page shows.
const maxResources = 100

// DefaultHeartbeat is how often mcp-go pings an idle stream.
const DefaultHeartbeat = 15 * time.Second

// Agent is what MCP shows of one of agentik's agents.
type Agent struct {
	Slug        string
	Name        string
	Description string
}

// Config holds what the handler needs.
type Config struct {
	Runner *agent.Runner
	Broker *broker.Broker
	// Agents lists the agents the caller (the principal in ctx) may use.
	Agents    func(ctx context.Context) ([]Agent, error)
	Heartbeat time.Duration // DefaultHeartbeat when 0
	// Streams holds the long-lived requests (tool calls following a
	// turn): its Closing ends them at shutdown (the turns themselves go on
	// or end with the runner), which waits for them. nil: a group of the
	// handler's own.
	Streams *sse.Group
	Logger  *slog.Logger
	Version string
	// Files lists the knowledge bases the caller may read, as resources
	// (knowledge.go); nil: none.
	Files *agent.Files
	// Peers reaches the other instances on the database, for a
	// cancellation of a call another one follows (cancel.go); nil: this
	// instance alone.
	Peers Peers
	// TaskAfter is how long a call whose client follows tasks runs before
	// it becomes a task (tasks.go); DefaultTaskAfter when 0.
	TaskAfter time.Duration
}

// Handler is the MCP server. It is an http.Handler for Path.
type Handler struct {
	cfg  Config
	log  *slog.Logger
	mcp  *server.MCPServer
	http *server.StreamableHTTPServer

	mu    sync.Mutex
	tools map[string]Agent // the agents whose tool is registered, by slug, as registered

	calls calls // the calls followed, for a cancellation (cancel.go)
}

// requestKey carries the HTTP request's own context into the handlers, so a
// call can tell a cancellation (its context ends, the request's does not)
// from a client that left (both end).
type requestKey struct{}

// abortKey carries the cancel of the request's context: a call that
// stops at shutdown ends its stream with it, so that mcp-go writes no
// result and the client resumes the call elsewhere (resume.go).
type abortKey struct{}

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
	if cfg.TaskAfter <= 0 {
		cfg.TaskAfter = DefaultTaskAfter
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, tools: map[string]Agent{}}
	if cfg.Peers != nil {
		cfg.Peers.OnBroadcast(cancelTopic, h.peerCancelled)
	}
	hooks := &server.Hooks{}
	hooks.AddAfterListResources(h.listResources)
	hooks.AddBeforeCallTool(keepRPCID)
	hooks.AddAfterInitialize(hideTasks) // tasks.go
	h.mcp = server.NewMCPServer("agentik", cfg.Version,
		server.WithInstructions("agentik's agents: call ask_<agent> with a message; pass the conversation_id a call returned to continue that conversation. Each conversation is a resource with its transcript."),
		server.WithToolCapabilities(true),
		server.WithExtensions(map[string]any{taskExtension: map[string]any{}}),
		server.WithResourceCapabilities(false, false),
		server.WithToolFilter(h.filterTools),
		server.WithHooks(hooks),
		server.WithRecovery(),
	)
	h.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(resourcePrefix+"{id}", "conversation",
			mcp.WithTemplateDescription("an agentik conversation's transcript"), mcp.WithTemplateMIMEType("text/markdown")),
		h.readResource)
	h.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(knowledgePrefix+"{id}", "knowledge base",
			mcp.WithTemplateDescription("an agentik knowledge base: its files and their state"), mcp.WithTemplateMIMEType("text/markdown")),
		h.readKnowledge)
	h.http = server.NewStreamableHTTPServer(h.mcp,
		server.WithEndpointPath(Path),
		server.WithHeartbeatInterval(cfg.Heartbeat),
		server.WithEventStore(&idOnly{}),
		// agentik's own middleware checks Host and Origin for every route.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(cfg.Logger),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			return context.WithValue(ctx, requestKey{}, r.Context())
		}),
	)
	return h
}

// Routes is the MCP surface: pattern → handler, for the server's mux.
func (h *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{Path: h}
}

// ServeHTTP implements http.Handler: the caller's agents get their tools
// registered first (mcp-go looks a called tool up among registered ones;
// the filter shows each caller only its own). There is no standalone SSE
// stream (GET answers 405, as the transport allows, but for a reconnect
// that resumes a call, resume.go): mcp-go feeds a
// session's notifications to whichever of its streams reads first, so
// with one open the progress of a call would reach the client split over
// two connections, out of order; without it, everything of a call
// (progress, elicitation) goes on that call's own stream, in order.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if h.resumeGet(w, r) {
			return
		}
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "agentik's MCP server has no standalone SSE stream: POST requests, each answered on its own stream", http.StatusMethodNotAllowed)
		return
	}
	var m rpcMessage
	if r.Method == http.MethodPost {
		var ok bool
		if m, ok = readMessage(w, r); !ok {
			return
		}
		if id, ok := cancelNotification(m); ok {
			h.cancelled(r, id) // cancel.go
			if r.Header.Get(server.HeaderKeySessionID) == "" || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
				w.WriteHeader(http.StatusAccepted) // a notification; mcp-go would refuse one without _meta
				return
			}
		} else if r.Header.Get(server.HeaderKeySessionID) == "" && !sessionless(w, r, m) {
			return
		}
	}
	if !h.cfg.Streams.Hold() {
		http.Error(w, "agentik is shutting down", http.StatusServiceUnavailable)
		return
	}
	defer h.cfg.Streams.Release()
	if err := h.register(r.Context()); err != nil {
		h.log.Error("mcp_agents_failed", "err", err)
		http.Error(w, "agentik could not list its agents", http.StatusInternalServerError)
		return
	}
	if r.Method == http.MethodPost && h.serveTask(w, r, m) { // tasks.go
		return
	}
	ctx, abort := context.WithCancel(r.Context())
	defer abort()
	wc := &written{more: make(chan struct{})}
	r = r.WithContext(context.WithValue(context.WithValue(ctx, abortKey{}, abort), writtenKey{}, wc))
	h.http.ServeHTTP(flusher{w, http.NewResponseController(w), wc}, r)
}

// maxBody bounds the body of a POST, read here before mcp-go reads it.
const maxBody = 4 << 20

// rpcMessage is what ServeHTTP reads of a POST's JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// readMessage reads a POST's body, puts it back for mcp-go and returns the
// message as far as it parses (mcp-go answers what does not). ok is false
// when the body could not be read (answered here).
func readMessage(w http.ResponseWriter, r *http.Request) (rpcMessage, bool) {
	var m rpcMessage
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeRPCError(w, nil, mcp.INVALID_REQUEST, "the request body could not be read: "+err.Error())
		return m, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	_ = json.Unmarshal(body, &m)
	return m, true
}

// sessionless checks a POST without an Mcp-Session-Id: only initialize (or
// a request of a sessionless protocol version, which mcp-go serves on its
// own) may come without one. Anything else is answered here with 400 and
// a JSON-RPC error that says what to send, as the transport asks of a
// server that requires sessions (mcp-go answers 404 "Invalid session ID",
// which tells a client its session ended when it never had one). It
// reports whether to go on.
func sessionless(w http.ResponseWriter, r *http.Request, m rpcMessage) bool {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	if m.Method == "" || m.Method == string(mcp.MethodInitialize) ||
		mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(p.Meta.ProtocolVersion()) {
		return true // mcp-go answers what it does not parse, and serves these
	}
	writeRPCError(w, m.ID, mcp.INVALID_REQUEST, fmt.Sprintf("%s needs a session: send initialize first, then this request with the %s header its answer carries", m.Method, server.HeaderKeySessionID))
	return false
}

// writeRPCError answers 400 with a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// flusher lets mcp-go stream through the server's wrapped ResponseWriter
// (it streams only to a writer that is an http.Flusher itself), and
// counts the progress notifications written.
type flusher struct {
	http.ResponseWriter
	rc *http.ResponseController
	wc *written
}

func (f flusher) Flush()                      { _ = f.rc.Flush() }
func (f flusher) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func (f flusher) Write(p []byte) (int, error) {
	n, err := f.ResponseWriter.Write(p)
	if c := bytes.Count(p, progressMethod); c > 0 {
		f.wc.add(c)
	}
	return n, err
}

// progressMethod is in each progress notification mcp-go writes (one
// event a Write).
var progressMethod = []byte(`"method":"` + string(mcp.MethodNotificationProgress) + `"`)

// written counts the progress notifications of a request written to its
// stream. mcp-go hands a 2026-07-28 request's notifications to a writer
// goroutine that drops the last one when the result wins the race to the
// stream; a call waits for its notifications to be written before it
// returns (turnCall.flushed).
type written struct {
	mu   sync.Mutex
	n    int
	more chan struct{} // closed and replaced at each write
}

type writtenKey struct{}

func (w *written) add(n int) {
	w.mu.Lock()
	w.n += n
	close(w.more)
	w.more = make(chan struct{})
	w.mu.Unlock()
}

// wait waits until n notifications were written, or ctx ends, or limit
// passes; it reports whether they were.
func (w *written) wait(ctx context.Context, n int, limit time.Duration) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		w.mu.Lock()
		got, more := w.n, w.more
		w.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-more:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
}

func toolName(slug string) string { return toolPrefix + strings.ReplaceAll(slug, "-", "_") }

// register adds the tool of each of the caller's agents not registered
// yet, and registers again one whose name or description changed.
func (h *Handler) register(ctx context.Context) error {
	as, err := h.cfg.Agents(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range as {
		if old, ok := h.tools[a.Slug]; ok && old == a {
			continue
		}
		h.tools[a.Slug] = a
		h.mcp.AddTool(h.tool(a), h.ask(a.Slug))
	}
	return nil
}

// tool is an agent's tool.
func (h *Handler) tool(a Agent) mcp.Tool {
	desc := a.Description
	if desc == "" {
		desc = "an agentik agent"
	}
	return mcp.NewTool(toolName(a.Slug),
		mcp.WithDescription(fmt.Sprintf("Ask agentik's agent %q (%s). It runs a turn in an agentik conversation, with that agent's tools, and answers with its reply; the turn is visible live in agentik's UI. Pass conversation_id (from an earlier result) to continue that conversation.", a.Name, desc)),
		mcp.WithString("message", mcp.Required(), mcp.Description("what to ask or tell the agent")),
		mcp.WithString("conversation_id", mcp.Description("continue this conversation (from an earlier result's structuredContent); omit to start a new one")),
		mcp.WithRawOutputSchema([]byte(`{"type":"object","properties":{"conversation_id":{"type":"string","description":"the conversation the turn ran in: pass it to continue"},"message_id":{"type":"string","description":"the id of the agent's answer"}},"required":["conversation_id","message_id"]}`)),
	)
}

// filterTools shows the caller the tools of its own agents only.
func (h *Handler) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	as, err := h.cfg.Agents(ctx)
	if err != nil {
		return nil
	}
	mine := map[string]bool{}
	for _, a := range as {
		mine[toolName(a.Slug)] = true
	}
	var out []mcp.Tool
	for _, t := range tools {
		if mine[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// mayUse reports whether the caller may use the agent.
func (h *Handler) mayUse(ctx context.Context, slug string) (bool, error) {
	as, err := h.cfg.Agents(ctx)
	if err != nil {
		return false, err
	}
	for _, a := range as {
		if a.Slug == slug {
			return true, nil
		}
	}
	return false, nil
}

// listResources replaces the (empty) static list with the caller's
// conversations, most recently updated first.
func (h *Handler) listResources(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	offset := 0
	if c := string(req.Params.Cursor); c != "" {
		if b, err := base64.StdEncoding.DecodeString(c); err == nil {
			if n, ok := strings.CutPrefix(string(b), "offset:"); ok {
				offset, _ = strconv.Atoi(n)
			}
		}
	}
	convs, total, err := h.cfg.Runner.Conversations(ctx, max(offset, 0), maxResources)
	res.Resources = []mcp.Resource{}
	res.NextCursor = ""
	if err != nil {
		h.log.Warn("mcp_resources_failed", "err", err)
		return
	}
	for _, c := range convs {
		if c.Temp {
			continue
		}
		title := c.Title
		if title == "" {
			title = "untitled conversation"
		}
		r := mcp.NewResource(resourcePrefix+c.ID, title,
			mcp.WithResourceDescription(fmt.Sprintf("agentik conversation, %d messages, updated %s", c.MessageCount, c.UpdatedAt.UTC().Format(time.RFC3339))),
			mcp.WithMIMEType("text/markdown"))
		res.Resources = append(res.Resources, r)
	}
	if offset == 0 {
		res.Resources = append(res.Resources, h.knowledgeResources(ctx)...) // knowledge.go
	}
	if next := offset + len(convs); next < total && len(convs) > 0 {
		res.NextCursor = mcp.Cursor(base64.StdEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(next))))
	}
}

// readResource reads a conversation's transcript as Markdown.
func (h *Handler) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id, ok := strings.CutPrefix(req.Params.URI, resourcePrefix)
	if !ok || id == "" {
		return nil, fmt.Errorf("no resource %q: agentik's resources are %s<conversation id>", req.Params.URI, resourcePrefix)
	}
	c, err := h.cfg.Runner.Conversation(ctx, id)
	if errors.Is(err, agent.ErrNotFound) {
		return nil, server.ErrResourceNotFound
	}
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	title := c.Title
	if title == "" {
		title = "Untitled conversation"
	}
	fmt.Fprintf(&b, "# %s\n", title)
	for off := 0; ; off += agent.MaxPageSize {
		page, err := h.cfg.Runner.Messages(ctx, agent.MessageQuery{ConversationID: id, Offset: off, Limit: agent.MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			transcript(&b, m)
		}
		if len(page) < agent.MaxPageSize {
			break
		}
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: b.String()}}, nil
}

// transcript writes one message of a transcript.
func transcript(b *strings.Builder, m agent.Message) {
	text := func(cs []agent.Content) string {
		var parts []string
		for _, c := range cs {
			switch c.Type {
			case agent.ContentText:
				parts = append(parts, c.Body)
			case agent.ContentImage:
				parts = append(parts, "[image "+c.Mime+"]")
			}
		}
		return strings.Join(parts, "\n\n")
	}
	switch m.Type {
	case agent.MessageUser:
		fmt.Fprintf(b, "\n## User\n\n%s\n", text(m.Content))
	case agent.MessageAssistant:
		fmt.Fprintf(b, "\n## Assistant\n\n%s\n", text(m.Content))
		if m.Interrupted {
			b.WriteString("\n(interrupted)\n")
		}
	case agent.MessageToolCall:
		fmt.Fprintf(b, "\n> tool call %s(%s)\n", m.Name, m.Arguments)
	case agent.MessageToolResult:
		fmt.Fprintf(b, "\n> tool result of %s: %s\n", m.Name, agent.Shorten(m.Result, 2000))
	case agent.MessageError:
		fmt.Fprintf(b, "\n> error (%s): %s\n", m.Code, m.Error)
	case agent.MessageSummary:
		fmt.Fprintf(b, "\n> summary of %d earlier messages: %s\n", m.Replaces, m.Summary)
	}
}
