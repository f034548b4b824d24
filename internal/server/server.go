// Package server is agentik's HTTP surface: the REST+SSE facade of the
// original agentik, the WebSocket protocol, and the browser UI's pages.
// routes.go lists every route; error.go is the one place that maps errors
// to statuses and codes.
package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/a2a"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/agui"
	"github.com/agentik/agentik/internal/aisdk"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/mcpserve"
	"github.com/agentik/agentik/internal/openai"
	"github.com/agentik/agentik/internal/sse"
)

// Limits of the HTTP surface.
const (
	// SSEHeartbeat is how often an idle SSE stream gets a comment line, so
	// proxies keep it open and clients notice a dead connection.
	SSEHeartbeat = 15 * time.Second
	// HeaderTimeout bounds reading a request's headers.
	HeaderTimeout = 10 * time.Second
	// BodyTimeout bounds reading a request's body, from the end of its
	// headers: a client that stalls mid-body is cut off. It ends when the
	// body has been read, so a response streamed after it (SSE from
	// /send) is not affected; GET streams (SSE, WebSocket) have no body.
	BodyTimeout = 60 * time.Second
	// MaxImportBytes is the default cap of an import's body: `agentik
	// import` sends a file in parts of at most 12 MiB, split between
	// conversations, so a part is bigger only when one conversation is,
	// and that conversation must still come back from its export. The
	// server holds about 9 times an import's size while it imports
	// (an 18.9 MB export peaked at 164 MB RSS), so the default stays
	// at 64 MiB.
	MaxImportBytes = 64 << 20
	// IdleTimeout closes a keep-alive connection that sends no next
	// request. Streams are requests in progress, never idle.
	IdleTimeout = 120 * time.Second
)

// ToolLister reports the state of the tool servers.
type ToolLister interface {
	Servers() []agent.ToolServer
}

// EventLog is what the server reads of the event log besides the broker:
// replay pages, the log's bounds and identity, and a health check. The
// database (package store) implements it.
type EventLog interface {
	// EncodedEvents returns stored events with seq > q.After in seq
	// order, as the bytes they were stored as.
	EncodedEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error)
	// EventSeq returns the seq of the event with that id, or agent.ErrNotFound.
	EventSeq(ctx context.Context, id string) (int64, error)
	// Bounds returns the seq through which events were pruned and the
	// highest committed seq.
	Bounds(ctx context.Context) (pruned, head int64, err error)
	// Epoch identifies the database: a random id made when it was created.
	Epoch() string
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
}

// Config holds what the server needs.
type Config struct {
	Runner *agent.Runner
	Broker *broker.Broker
	Store  EventLog
	// Conversations, Agents and Memory answer their nouns' routes
	// (agent/conversations.go, agentdef.go, memory.go); required.
	Conversations *agent.Conversations
	Agents        *agent.Agents
	Memory        *agent.Memory
	// Budgets answers /agentik/usage and the budget notes of the pages
	// (agent/budget.go); nil: no usage is kept, no budget enforced.
	Budgets *agent.Budgets
	// Resources answers /agentik/resources and /agentik/prompts and the
	// MCP Apps' reads (agent/resource.go); required.
	Resources *agent.ToolResources
	// Schedules answers /agentik/schedules; nil: 503 unavailable.
	Schedules *agent.Scheduler
	// Projects answers /agentik/projects; nil: 503.
	Projects *agent.Projects
	// Shares answers /agentik/shares and the /s/{token} pages; nil: 503.
	Shares *agent.Shares
	// PublicShares (AGENTIK_PUBLIC_SHARES=on) lets anyone holding a share
	// link read it without signing in (share.go).
	PublicShares bool
	// Files answers /agentik/files and /agentik/knowledge; nil: 503
	// unavailable.
	Files *agent.Files
	// Inbox answers /agentik/inbox; nil: 503 unavailable.
	Inbox *agent.Inbox
	// Site is the admin panel (admin.go); nil: 503 unavailable.
	Site *agent.Site
	// Feedback answers the feedback routes (feedback.go); nil: 503.
	Feedback *agent.Feedbacks
	// Prompts answers /agentik/prompts (savedprompt.go); nil: 503.
	Prompts *agent.PromptLibrary
	// Preferences answers /agentik/me/preferences and sets the pages'
	// theme; nil: 503 (and the browser's theme).
	Preferences *agent.PreferencesService
	Tools       ToolLister // nil when no tools are configured
	// The tool servers' side that depends on the user, tool.Manager's,
	// which app.Wire gives: Credentials keeps the users' secrets of
	// per-user servers (credential.go; nil: none runs as its caller),
	// SignIn finishes a remote server's sign-in (oauth.go; nil: none signs
	// in here), ToolsFor lists the servers as each principal sees them,
	// their sign-in links included (nil: Tools' list for everyone). A rig
	// that sets Tools to other tools sets ToolsFor with it.
	Credentials CredentialKeeper
	SignIn      SignInCompleter
	ToolsFor    ToolsForPrincipal
	ModelName   string // "" when no model is configured
	// ModelNotice, when set, says what the UI's banner area shows about
	// the model: demo mode, or what the start-up probe found wrong with the
	// endpoint ("" for nothing). It is asked on every page.
	ModelNotice func() string
	Logger      *slog.Logger
	// AllowedHosts are the Host header values accepted besides loopback
	// names (DNS-rebinding protection). "*" accepts any.
	AllowedHosts []string
	// AllowedOrigins are Origin patterns (host[:port], path.Match syntax)
	// accepted for the WebSocket and state-changing requests besides the
	// request's own host.
	AllowedOrigins []string
	Heartbeat      time.Duration // SSE heartbeat; default SSEHeartbeat
	// HeaderTimeout, BodyTimeout and IdleTimeout default to the constants
	// of those names; Configure puts the first and last on an http.Server.
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	// MaxImportBytes caps the body of POST /agentik/import, which holds
	// whole conversations (every other body is capped at
	// protocol.MaxBodyBytes); default MaxImportBytes.
	MaxImportBytes int64
	// APIKeys, when not empty, are required on every route but /health,
	// /login and the assets: as Authorization: Bearer, or as the session
	// cookie the sign-in page sets.
	APIKeys []string
	// NewCommandLimiter makes the command rate limiter of each WebSocket
	// connection; nil means a token bucket of WSCommandRate per second,
	// WSCommandBurst deep. Tests inject one that never refills.
	NewCommandLimiter func() CommandLimiter
	// Clock is the time source of the WebSocket strike window, the
	// authentication rate limits and sessions; nil means time.Now.
	Clock func() time.Time
	// AuthFailureBurst and AuthFailureEvery rate-limit failed sign-ins and
	// bad API keys per client address; they default to the constants of
	// those names.
	AuthFailureBurst int
	AuthFailureEvery time.Duration
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (for the rate limits) and whose X-Forwarded-Proto: https
	// makes the session cookie Secure. Empty: the peer is the client.
	TrustedProxies []netip.Prefix
	// WSConnsPerClient caps the WebSocket connections of one client
	// address; default WSConnsPerClient.
	WSConnsPerClient int
	// SessionTTL is how long a sign-in lasts; default SessionTTL.
	SessionTTL time.Duration
	// The store's abilities beside its EventLog, each named here and
	// given by app.Wire from the database (never discovered on Store by a
	// type assertion); nil: the server does without, as it says.
	//
	// Revocations keeps sign-outs across restarts and instances; nil:
	// in this process only.
	Revocations Revocations
	// Users keeps the users and their keys (then per-user keys sign in);
	// nil: no accounts, unless Accounts is given.
	Users agent.UserStore
	// PasswordStore keeps password accounts (password.go); nil: none.
	PasswordStore agent.PasswordStore
	// Groups keeps the groups (group.go); nil: the group routes are
	// unavailable.
	Groups agent.GroupStore
	// Responses keeps the OpenAI Responses API's stored responses; nil:
	// store=true is refused (internal/openai).
	Responses openai.ResponseStore
	// A2AKV keeps the A2A tasks' push configs (internal/a2a); nil: in
	// memory.
	A2AKV a2a.KV
	// Peers lists the other instances' MCP sessions (PostgreSQL); nil:
	// this instance alone (internal/mcpserve).
	Peers mcpserve.Peers
	// Cursors turns instants into cursors (?after= a time); nil: after
	// must be a seq.
	Cursors CursorIndex
	// Metrics serves GET /metrics (behind the API keys like every route);
	// nil: 404.
	Metrics http.Handler
	// Observer is told about every request and stream (metrics); may be nil.
	Observer Observer
	// OIDC turns on sign-in with an OpenID provider (oidc.go); nil: off.
	OIDC *OIDCConfig
	// TrustedUserHeader names the header in which a reverse proxy in
	// TrustedProxies says who the user is (oauth2-proxy, Authelia); "":
	// off. TrustedAdmins are the emails it names that are admins;
	// TrustedInviteOnly admits only users an admin made.
	TrustedUserHeader string
	TrustedAdmins     []string
	TrustedInviteOnly bool
	// PushAllow opens internal addresses to A2A pushes (AGENTIK_PUSH_ALLOW);
	// SecretKey (AGENTIK_SECRET_KEY) derives their signing key.
	PushAllow a2a.PushAllow
	SecretKey string
	// Accounts manages users and their keys; nil: over Users.
	Accounts *agent.Accounts
	// Signup is AGENTIK_SIGNUP (agent.SignupClosed when ""): who may make
	// a password account (password.go). Passwords hashes passwords; nil:
	// argon2id at package password's default costs.
	Signup    string
	Passwords agent.PasswordHasher
	// SCIMToken is AGENTIK_SCIM_TOKEN: the bearer token of SCIM 2.0 at
	// /scim/v2 (internal/scim); "": SCIM is off (404).
	SCIMToken string
	// WSCommandTimeout bounds the work of one WebSocket command; default
	// WSCommandTimeout.
	WSCommandTimeout time.Duration
	// WSWriteTimeout, WSPongTimeout and WSStallTimeout bound a WebSocket
	// write, a pong and a write blocked before the connection's
	// subscriptions end with slow_consumer; default WSWriteTimeout,
	// WSPongTimeout and 2 s. Test rigs widen them for a loaded machine.
	WSWriteTimeout, WSPongTimeout, WSStallTimeout time.Duration
	// PageMessages is how many of the latest messages a conversation page
	// renders (older ones are counted, and shown on request); default
	// PageMessages. Tests make it small, so a "long" conversation needs
	// few rows.
	PageMessages int
	// HistoryBytes bounds a page of history (REST /messages, get_messages,
	// the messages a conversation page renders) by its messages' stored
	// JSON; exports read history in pages of it. Default HistoryBytes.
	HistoryBytes int
	// QueuePageBytes bounds a page of GET …/queue by its sends' content
	// (as stored JSON). Default QueuePageBytes.
	QueuePageBytes int
}

// QueuePageBytes is the default byte bound of a page of a queue (which
// holds at most agent.MaxQueuedBytes in all).
const QueuePageBytes = 1 << 20

// HistoryBytes is the default byte bound of a page of history: 200
// messages of 1 MiB come in pages of a few, not as one 200 MB answer.
const HistoryBytes = 4 << 20

// Server serves agentik over HTTP. It is an http.Handler.
type Server struct {
	cfg       Config
	runner    *agent.Runner
	convs     *agent.Conversations // Config.Conversations
	broker    *broker.Broker
	store     EventLog
	tools     ToolLister
	modelName string
	log       *slog.Logger
	handler   http.Handler
	failures  *failures // failed authentication per client address
	wsConns   *counter  // WebSocket connections per client address
	revoked   revoked   // signed-out sessions seen by this process
	// revocations keeps sign-outs in the database; nil: memory only.
	revocations Revocations
	lists       listCache // encoded pages of the conversation list
	openai      *openai.Handler
	aisdk       *aisdk.Handler
	a2a         *a2a.Handler // A2A; also the push deliverer's (A2A)
	agui        *agui.Handler
	people      *people // accounts: principals, user sessions, live streams (people.go)
	// ops is the op table (op.go): the ops routes.go registers through
	// Server.op, by WebSocket op name. Written only while routes runs.
	ops map[string]*op

	// streams are the long-lived streams (SSE, WebSocket, /v1's) that
	// Shutdown ends and waits for; closing is its Closing.
	streams *sse.Group
	closing <-chan struct{}
}

// New makes a Server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = SSEHeartbeat
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.AuthFailureBurst <= 0 {
		cfg.AuthFailureBurst = AuthFailureBurst
	}
	if cfg.AuthFailureEvery <= 0 {
		cfg.AuthFailureEvery = AuthFailureEvery
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = SessionTTL
	}
	if cfg.WSConnsPerClient <= 0 {
		cfg.WSConnsPerClient = WSConnsPerClient
	}
	if cfg.PageMessages <= 0 || cfg.PageMessages > agent.MaxPageSize {
		cfg.PageMessages = PageMessages
	}
	if cfg.HistoryBytes <= 0 {
		cfg.HistoryBytes = HistoryBytes
	}
	if cfg.QueuePageBytes <= 0 {
		cfg.QueuePageBytes = QueuePageBytes
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = HeaderTimeout
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = BodyTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = IdleTimeout
	}
	if cfg.MaxImportBytes <= 0 {
		cfg.MaxImportBytes = MaxImportBytes
	}
	s := &Server{
		cfg: cfg, runner: cfg.Runner, convs: cfg.Conversations, broker: cfg.Broker, store: cfg.Store, tools: cfg.Tools,
		modelName: cfg.ModelName, log: cfg.Logger, streams: sse.NewGroup(),
		failures: newFailures(cfg.Clock, cfg.AuthFailureEvery, cfg.AuthFailureBurst),
		wsConns:  newCounter(cfg.WSConnsPerClient),
	}
	s.closing = s.streams.Closing()
	s.revocations = cfg.Revocations
	responses := cfg.Responses
	s.openai = openai.New(openai.Config{Runner: cfg.Runner, Conversations: cfg.Conversations, Agents: cfg.Agents, Broker: cfg.Broker, ModelName: cfg.ModelName,
		Streams: s.streams, Heartbeat: cfg.Heartbeat, Clock: cfg.Clock, Logger: cfg.Logger, Responses: responses, Files: cfg.Files})
	s.aisdk = aisdk.New(aisdk.Config{Runner: cfg.Runner, Conversations: cfg.Conversations, Broker: cfg.Broker, Streams: s.streams, Heartbeat: cfg.Heartbeat, Logger: cfg.Logger})
	s.agui = agui.New(agui.Config{Runner: cfg.Runner, Conversations: cfg.Conversations, Broker: cfg.Broker, Streams: s.streams, Heartbeat: cfg.Heartbeat, Logger: cfg.Logger})
	s.people = newPeople(s)
	s.a2a = s.newA2A()
	s.handler = s.routes()
	return s
}

// Configure sets the connection timeouts of the http.Server that serves s:
// headers and idle keep-alives. (The body's timeout is set per request, so
// that streams are left alone; there is no write timeout, for the same
// reason: slow stream readers are dropped by the broker instead.)
func (s *Server) Configure(hs *http.Server) {
	hs.ReadHeaderTimeout = s.cfg.HeaderTimeout
	hs.IdleTimeout = s.cfg.IdleTimeout
}

// A2A is the server's A2A handler: a push deliverer follows its sends
// (a2a.PushDeliverer), so it is this one, not another.
func (s *Server) A2A() *a2a.Handler { return s.a2a }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Shutdown ends long-lived streams (WebSockets close with 1012 so clients
// reconnect) and waits for them, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.streams.Shutdown(ctx) }

// errShuttingDown is what a stream asked for during shutdown gets.
var errShuttingDown = agent.Errorf(agent.CodeUnavailable, "the server is shutting down; reconnect in a moment")

// hostAllowed reports whether a Host header names this server: a loopback
// name, or one of the allowed hosts.
func (s *Server) hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(strings.ToLower(h), "[]")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.cfg.AllowedHosts {
		a = strings.ToLower(a)
		if a == "*" || a == h || a == strings.ToLower(host) {
			return true
		}
	}
	return false
}
