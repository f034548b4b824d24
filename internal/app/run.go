package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentik/agentik/internal/a2a"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/secret"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/telemetry"
	"github.com/agentik/agentik/internal/tool"
	"github.com/agentik/agentik/internal/webhook"
)

// Settings is everything the server can be told; cmd/agentik reads them
// from the environment and flags (flags win) and documents each in its
// usage text.
type Settings struct {
	Addr           string
	DB             string
	StoreMode      store.Mode // AGENTIK_STORE_MODE: fast (the speed layer) or plain (docs/store.md)
	SystemPrompt   string
	MCPConfig      string
	Agents         string // AGENTIK_AGENTS: a JSON file of agents defined as code
	APIKeys        []string
	EventTTL       time.Duration // DefaultEventTTL when 0
	MaxAnswerBytes int
	MaxImportBytes int64 // AGENTIK_MAX_IMPORT_BYTES; 0 = server.MaxImportBytes
	// MaxFileBytes and MaxUserFileBytes cap uploaded files
	// (AGENTIK_MAX_FILE_BYTES, AGENTIK_MAX_USER_FILE_BYTES; 0: agent's
	// defaults); EmbeddingModel makes knowledge's embeddings
	// (AGENTIK_EMBEDDING_MODEL; "": keyword search only).
	MaxFileBytes     int64
	MaxUserFileBytes int64
	EmbeddingModel   string
	ContextWindow    int    // AGENTIK_CONTEXT_WINDOW: tokens; 0 = discovered, else 8192
	SummaryModel     string // AGENTIK_SUMMARY_MODEL: makes compaction summaries; "" = the model
	AllowedHosts     []string
	AllowedOrigins   []string
	TrustedProxies   []netip.Prefix
	Insecure         bool
	LogLevel         slog.Level
	LogJSON          bool
	Demo             bool     // the built-in scripted model and tool (demo.go)
	Webhooks         []string // receivers of turn.ended
	WebhookSecret    []byte   // decoded whsec_ secret
	Providers        string   // path of the providers file (AGENTIK_PROVIDERS)
	Titles           string   // model, first_line, or "" (model when a model is configured)
	NoMemory         bool     // AGENTIK_MEMORY=off: no long-term memory (agent/memory.go)
	// ApprovalTimeout (AGENTIK_APPROVAL_TIMEOUT) denies a tool call that
	// waited longer for a person's decision; 0: it waits until decided.
	ApprovalTimeout time.Duration
	// DefaultBudget (AGENTIK_DEFAULT_BUDGET) is every user's token budget
	// unless an admin gives them their own; zero: none.
	DefaultBudget agent.Budget
	// MaxSchedules (AGENTIK_MAX_SCHEDULES) caps one user's schedules;
	// 0: agent.DefaultMaxSchedules.
	MaxSchedules int
	// ScheduleMinInterval (AGENTIK_SCHEDULE_MIN_INTERVAL) is the shortest
	// time a schedule's rule may leave between runs; 0:
	// agent.DefaultMinInterval.
	ScheduleMinInterval time.Duration
	// OIDC (AGENTIK_OIDC_*) and the trusted proxy header
	// (AGENTIK_TRUSTED_USER_HEADER): sign-in by someone else.
	OIDC              *server.OIDCConfig
	TrustedUserHeader string
	Admins            []string      // AGENTIK_ADMINS
	InviteOnly        bool          // AGENTIK_OIDC_SIGNUP=invite
	Signup            string        // AGENTIK_SIGNUP: password accounts (agent.Signup…)
	PublicShares      bool          // AGENTIK_PUBLIC_SHARES=on: share links open without signing in
	AuditTTL          time.Duration // AGENTIK_AUDIT_TTL; 0 keeps the audit log forever
	SCIMToken         string        // AGENTIK_SCIM_TOKEN: SCIM 2.0 at /scim/v2; "": off
	// SecretKey (AGENTIK_SECRET_KEY) seals the OAuth tokens of remote MCP
	// servers at rest ("": they are kept in memory only) and derives the
	// A2A push signing key.
	SecretKey string
	// PushAllow (AGENTIK_PUSH_ALLOW) opens internal addresses to A2A
	// pushes; PushTimeout (AGENTIK_PUSH_TIMEOUT) caps one task's push
	// deliveries (0: a2a's default).
	PushAllow   a2a.PushAllow
	PushTimeout time.Duration
	// OAuthRedirect (AGENTIK_MCP_OAUTH_REDIRECT_URL) is agentik's
	// /agentik/oauth/callback as browsers reach it; "": on the listen address.
	OAuthRedirect string
	// Listener, when set, is where the server serves instead of listening
	// on Addr (the bench's in-process server picks a free port first).
	Listener net.Listener
	// DrainTimeout (AGENTIK_DRAIN_TIMEOUT) is how long a graceful stop
	// lets running turns finish; the rest are continued by the next start
	// or another instance. 0: none is waited for.
	DrainTimeout time.Duration
	// TurnContinuations (AGENTIK_TURN_CONTINUATIONS) bounds how many
	// times a turn whose process died is continued (agent.Config's
	// Continuations: 0 the default, below 0 none).
	TurnContinuations int
	// RecoverInterval (AGENTIK_RECOVER_INTERVAL) is how often an instance
	// looks for turns whose instance died (PostgreSQL) and continues them;
	// 0: DefaultRecoverInterval.
	RecoverInterval time.Duration
}

// DefaultDrainTimeout is AGENTIK_DRAIN_TIMEOUT's default.
const DefaultDrainTimeout = 30 * time.Second

// DefaultEventTTL is how long events are kept unless told otherwise.
const DefaultEventTTL = 168 * time.Hour

// shutdownTimeout bounds a graceful stop after the drain
// (Settings.DrainTimeout): the turns still running are stopped, to be
// continued after the start, streams close, the event writer flushes.
const shutdownTimeout = 8 * time.Second

// pruneEvery is how often events older than the TTL are deleted.
const pruneEvery = time.Hour

// DefaultRecoverInterval is how often turns orphaned by a dead instance
// are continued (with several instances on PostgreSQL; a single one
// recovers at start), unless Settings.RecoverInterval says otherwise.
const DefaultRecoverInterval = 30 * time.Second

// NewLogger is the server's logger: text or JSON on w at the settings'
// level, each record carrying its trace.
func NewLogger(s Settings, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.LogLevel}
	if s.LogJSON {
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts)))
}

// Run is the whole server: it listens (a busy port fails at once), wires
// the models, tools, telemetry, webhooks and the rest (Wire), serves until
// ctx is cancelled, then shuts down within shutdownTimeout. getenv reads
// the model's and the tracing's variables; logs go to logw. cmd/agentik
// and the bench's in-process server both run it.
func Run(ctx context.Context, cfg Settings, getenv func(string) string, logw io.Writer) error {
	if cfg.EventTTL <= 0 {
		cfg.EventTTL = DefaultEventTTL
	}

	// Listen first: a busy port fails at once.
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	defer ln.Close()

	w, err := Wire(ctx, cfg, getenv, logw, Hooks{})
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	a, log, st, b := w.App, w.Log, w.Store, w.Broker
	runner, srv := a.Runner, a.Server
	hs := &http.Server{Handler: srv, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	srv.Configure(hs)

	// A2A push notifications: one deliverer of the tasks' configs,
	// following the server's own A2A handler (its sends tell it of a
	// config stored after the task settled), placed before the server
	// serves.
	if err := (&a2a.PushDeliverer{Handler: srv.A2A(), Logger: log}).Start(ctx); err != nil {
		return fmt.Errorf("a2a push: %w", err)
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	pruneDone := make(chan struct{})
	pruneCtx, stopPrune := context.WithCancel(ctx)
	recoverNow := make(chan struct{}, 1)
	st.OnHandover(func() { // another instance stopped: its turns are free
		select {
		case recoverNow <- struct{}{}:
		default:
		}
	})
	go func() {
		defer close(pruneDone)
		maintain(pruneCtx, st, runner, cfg.EventTTL, cfg.AuditTTL, cmp.Or(cfg.RecoverInterval, DefaultRecoverInterval), recoverNow, log)
	}()
	// The deliverers of webhooks and push notifications run on one
	// instance of those sharing the database (its lead), from the
	// cursors they keep in it: each is delivered once, not once an
	// instance. A push config stored after its task settled is told to
	// the instance that leads (a broadcast), wherever its send came.
	a2aH := srv.A2A()
	a2aH.TellLate(func(id string) {
		if _, err := st.Broadcast(context.WithoutCancel(ctx), lateTopic, id); err != nil {
			log.Warn("a2a_push_late_not_told", "task_id", id, "err", err)
		}
	})
	st.OnBroadcast(lateTopic, func(id string) { go a2aH.LateConfig(id) }) // not on the listener's goroutine
	var hooks sync.WaitGroup
	hooks.Go(func() {
		leading(pruneCtx, st, "deliver", log, func(ctx context.Context) {
			var wg sync.WaitGroup
			for _, u := range cfg.Webhooks {
				wg.Go(func() {
					webhook.Run(ctx, webhook.Config{URL: u, Secret: cfg.WebhookSecret, Log: b, Cursors: st, Logger: log,
						Head: func(ctx context.Context) (int64, error) { _, h, err := st.Bounds(ctx); return h, err }})
				})
			}
			// A deliverer a lead: none of a lost lead's state is kept
			// (what was pending is in the database).
			wg.Go(func() { (&a2a.PushDeliverer{Handler: a2aH, Logger: log, TaskTimeout: cfg.PushTimeout}).Run(ctx) })
			wg.Wait()
		})
	})
	log.Info("listening", "addr", ln.Addr().String(), "db", RedactURL(cfg.DB))

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	stopPrune()
	<-pruneDone
	hooks.Wait()
	log.Info("shutting_down", "drain", cfg.DrainTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout+shutdownTimeout)
	defer cancel()
	_ = w.Shutdown(sctx, hs.Shutdown) // each failure is logged
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Hooks are what a test rig changes in the server Wire builds; Run sets
// none, so a rig runs the wiring production runs and a wiring bug fails
// its tests.
type Hooks struct {
	Now      agent.Clock            // the store's clock (Configure sets the runner's)
	OnCommit func([]agent.AllEvent) // config.OnCommit
	// Tools stand in for the tool servers of an mcp.json: Wire wires them
	// as it wires tool.Start's (metrics and spans of each call).
	// ContentTools are their calls with images (agent.Config.ContentTools;
	// nil: text only), ToolLister the server's list of them (nil: the
	// Manager's, which lists the admin panel's servers).
	Tools        agent.Tools
	ContentTools agent.ContentTools
	ToolLister   server.ToolLister
	// Configure adjusts the runner's and the server's configs, as Wire
	// made them, before start.
	Configure func(*agent.Config, *server.Config)
}

// Wired is the server Wire built, started but not serving: the App, the
// logger and the metrics. Close undoes the wiring, once the caller has
// closed the runner and the server's streams.
type Wired struct {
	*App
	Log     *slog.Logger
	Metrics *telemetry.Metrics
	undo    []func(context.Context) // the wiring's cleanups, in order
}

// Close runs the wiring's cleanups in reverse order: the model probe, the
// providers' checks, the tools, the demo, the database, the traces.
func (w *Wired) Close(ctx context.Context) {
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i](ctx)
	}
	w.undo = nil
}

// Shutdown is the one order of shutting down what Wire built, Run's and
// every test rig's: the runner (it drains: its turns finish within
// Settings.DrainTimeout, the rest are left to be continued), the server's
// streams, then the HTTP server by closeHTTP, then
// the wiring (Close: the database last but the traces). It logs each
// failure and returns them all, with what closing the database met.
func (w *Wired) Shutdown(ctx context.Context, closeHTTP func(context.Context) error) error {
	var errs []error
	step := func(event string, err error) {
		if err != nil {
			w.Log.Error(event, "err", err)
			errs = append(errs, err)
		}
	}
	closeErr := w.Runner.Close(ctx)
	step("runner_close_failed", closeErr)
	if closeErr == nil {
		// The turns the drain left, stopped: on PostgreSQL another
		// instance continues them now (one still ending here is not
		// handed over; the recovery tick takes it once this one is gone).
		step("handover_failed", w.Store.Handover(ctx))
	}
	step("streams_close_failed", w.Server.Shutdown(ctx))
	step("http_shutdown_failed", closeHTTP(ctx))
	w.Close(ctx)
	return errors.Join(append(errs, w.App.Close(ctx))...) // App.Close ran in Close: what it met
}

func (w *Wired) defers(f func(context.Context)) { w.undo = append(w.undo, f) }

// Wire builds the server Run serves from the settings: the telemetry, the
// database, the models (llm.Choose), the tools, the agents, the runner and
// the server, started. On an error what it built is closed.
func Wire(ctx context.Context, cfg Settings, getenv func(string) string, logw io.Writer, h Hooks) (_ *Wired, err error) {
	log := NewLogger(cfg, logw)
	w := &Wired{Log: log}
	defer func() {
		if err != nil {
			w.Close(ctx)
		}
	}()
	var a *App
	metrics := telemetry.NewMetrics(telemetry.Sources{
		Subscriptions: func() int { return a.Broker.Subscribers() },
		Drops:         func() map[string]int64 { return a.Broker.Drops() },
		HumanLoad:     func(ctx context.Context) (int, int, error) { return a.Store.HumanLoad(ctx) },
	})
	tracing, err := telemetry.NewTracing(ctx, getenv, "")
	if err != nil {
		return nil, err
	}
	var tracer trace.Tracer
	if tracing != nil {
		tracer = tracing.Tracer()
		w.defers(func(ctx context.Context) { // after the app closed: the turns' last spans are flushed
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if err := tracing.Shutdown(sctx); err != nil {
				log.Warn("trace_flush_failed", "err", err)
			}
		})
		log.Info("tracing_on")
	}
	tel := telemetry.New(telemetry.Options{Metrics: metrics, Tracer: tracer, Logger: log})
	a, err = open(ctx, config{DB: cfg.DB, Mode: cfg.StoreMode, Logger: log, Committed: metrics.Committed, Now: h.Now, OnCommit: h.OnCommit, MaxSchedules: cfg.MaxSchedules, ScheduleMinInterval: cfg.ScheduleMinInterval,
		// EXPERIMENTAL: set only by the bench (store/relay.go).
		Relay: getenv("AGENTIK_EXPERIMENTAL_RELAY")})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	w.defers(func(ctx context.Context) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if e := a.Close(sctx); e != nil {
			log.Error("shutdown_failed", "err", e)
		}
	})
	st, b := a.Store, a.Broker

	// The models (llm.Choose), and what the UI's banner says about them.
	notice := &modelNotice{}
	copts := llm.ChooseOptions{ProvidersFile: cfg.Providers, ContextWindow: cfg.ContextWindow, Getenv: getenv, Logger: log}
	if cfg.Demo {
		demo, err := startDemo(log)
		if err != nil {
			return nil, err
		}
		w.defers(func(context.Context) { demo.close() })
		copts.Fixed, copts.FixedName = &demo.config, "demo"
		notice.set(demoNotice)
	}
	choice, err := llm.Choose(ctx, copts)
	if err != nil {
		return nil, err
	}
	var model agent.Model
	unavailable := ""
	if err := choice.Problem; err != nil {
		// A local model server that is not up yet should not keep agentik
		// down: start without a model and say why on every send.
		log.Warn("model_unavailable", "err", err)
		unavailable = "the model is not available: " + err.Error() + "; fix the model settings and restart agentik"
		notice.set("Check the model settings: " + err.Error() + ".")
	}
	providers := choice.Providers
	// The models as the admin panel changes them (site.go): every model
	// call reads the providers of the moment.
	live := llm.NewLive(providers)
	model = tel.Model(live, choice.Default)
	switch {
	case providers != nil && choice.Endpoint == nil:
		log.Info("providers_configured", "providers", choice.FileProviders, "default", choice.Default)
	case providers != nil:
		log.Info("model_configured", "base_url", RedactURL(choice.Endpoint.BaseURL), "model", choice.Default)
		notice.probe(ctx, *choice.Endpoint, log) // in the background: a slow endpoint does not delay the start
		w.defers(func(context.Context) { notice.wait() })
	default:
		log.Warn("no_model_configured", "hint", "set OPENAI_BASE_URL or OPENAI_API_KEY (and OPENAI_MODEL), run Ollama on 127.0.0.1:11434, or add a provider in the admin panel (/admin)")
	}
	modelName := choice.Default

	var tools *tool.Manager
	panel := agent.NewSite(nil, nil) // the admin panel's: its backend is set below, its audit log by start
	rcfg := agent.Config{Model: model, SystemPrompt: cfg.SystemPrompt, MaxAnswerBytes: cfg.MaxAnswerBytes, Logger: log, Unavailable: unavailable,
		TurnContext: tel.TurnContext, SummaryModel: cfg.SummaryModel, Titles: cfg.Titles, ApprovalTimeout: cfg.ApprovalTimeout, NoMemory: cfg.NoMemory,
		Budgets:      &agent.Budgets{Default: cfg.DefaultBudget, Log: log.Warn, Site: panel}, // start gives it the store
		DrainTimeout: cfg.DrainTimeout, Continuations: cfg.TurnContinuations, Site: panel}
	rcfg.Catalog = live
	rcfg.Configured = live.Configured // the admin panel may remove every provider
	rcfg.Windows = live               // the window follows each conversation's model
	checkCtx, stopCheck := context.WithCancel(ctx)
	checked := make(chan struct{})
	go func() { defer close(checked); live.Run(checkCtx) }()
	w.defers(func(context.Context) { stopCheck(); <-checked })
	if rcfg.Titles == "" && providers != nil && !cfg.Demo {
		rcfg.Titles = agent.TitlesModel
	}
	var serverNames []string
	// The tools: the servers of AGENTIK_MCP_CONFIG, and those the admin
	// panel adds while the server runs (site.go), so there is always a
	// Manager.
	var tcfg tool.Config
	if cfg.MCPConfig != "" {
		if tcfg, err = tool.LoadConfig(cfg.MCPConfig, getenv); err != nil {
			return nil, err
		}
	}
	baseTools := map[string]bool{}
	for _, s := range tcfg.Servers {
		serverNames = append(serverNames, s.Name)
		baseTools[s.Name] = true
	}
	onChange := func(s agent.ToolServer) { b.Publish(agent.ToolServerEvent(s, time.Now())) }
	onResource := func(server, uri string) { b.Publish(agent.ResourceUpdatedEvent(server, uri, time.Now())) }
	tools, err = tool.Start(ctx, tcfg, tool.Options{Logger: log, OnChange: onChange, OnResourceUpdated: onResource, OAuth: mcpOAuth(cfg, st, log)})
	if err != nil {
		return nil, fmt.Errorf("start tools: %w", err)
	}
	w.defers(func(context.Context) { tools.Close() })
	st.OnBroadcast(signInTopic, func(body string) {
		var si signIn
		if json.Unmarshal([]byte(body), &si) == nil {
			go tools.SignedIn(si.Server, si.User) // not on the listener's goroutine
		}
	})
	rcfg.Tools, rcfg.Approval, rcfg.AppOnly = tools, tools.NeedsApproval, tools.AppOnly
	rcfg.Resources, rcfg.Prompts = tools, tools
	popts := llm.ProvidersOptions{Logger: log, ContextWindow: cfg.ContextWindow}
	if choice.Endpoint != nil {
		popts.HTTPClient = choice.Endpoint.HTTPClient // the demo's
	}
	baseSrc := agent.SourceEnv
	if choice.FileProviders > 0 {
		baseSrc = agent.SourceFile
	}
	backend := &site{store: st, live: live, base: choice.Config, baseSrc: baseSrc, popts: popts, tools: tools, baseTools: baseTools, getenv: getenv,
		envPrompt: cfg.SystemPrompt != "", envBudget: !cfg.DefaultBudget.IsZero(), values: panel.SetValues, log: log, running: map[string]siteMCPServer{}}
	if cfg.SecretKey != "" {
		if backend.box, err = secret.New(cfg.SecretKey); err != nil {
			return nil, err
		}
	}
	panel.SetBackend(backend)
	if err := backend.Apply(ctx); err != nil { // what the admin panel stored
		log.Warn("site_apply_failed", "err", err)
	}
	st.OnSite(func() { // another instance changed the settings (PostgreSQL)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), projectReloadTimeout)
		defer cancel()
		if err := backend.Apply(actx); err != nil {
			log.Warn("site_apply_failed", "err", err)
		}
	})
	var content agent.ContentTools = tools       // the runner's tool calls with their images
	var lister server.ToolLister = tools         // the server's list of tool servers
	var listFor server.ToolsForPrincipal = tools // that list as each principal sees it
	if h.Tools != nil {
		rcfg.Tools, content = h.Tools, h.ContentTools
		if h.ToolLister != nil {
			lister, listFor = h.ToolLister, nil
		}
	}
	if cfg.Demo {
		d := &demoTools{inner: tools}
		rcfg.Tools, content, lister, listFor = d, d, d, nil
	}
	var sv services
	if cfg.Agents != "" {
		var remotes map[string]a2a.RemoteAgent
		if sv.CodeAgents, remotes, err = loadAgents(cfg.Agents, getenv, serverNames); err != nil {
			return nil, err
		}
		if len(remotes) > 0 {
			rcfg.Remote = &a2a.Remotes{Agents: remotes, Logger: log}
		}
	}
	scfg := server.Config{
		ModelName: modelName, Logger: log,
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, APIKeys: cfg.APIKeys,
		ModelNotice:    notice.text,
		TrustedProxies: cfg.TrustedProxies,
		Metrics:        metrics.Handler(), Observer: metrics,
		OIDC: cfg.OIDC, TrustedUserHeader: cfg.TrustedUserHeader, TrustedAdmins: cfg.Admins, TrustedInviteOnly: cfg.InviteOnly,
		MaxImportBytes: cfg.MaxImportBytes,
		Signup:         cfg.Signup,
		PublicShares:   cfg.PublicShares,
		SCIMToken:      cfg.SCIMToken,
		PushAllow:      cfg.PushAllow, SecretKey: cfg.SecretKey,
	}
	scfg.Tools, scfg.ToolsFor = lister, listFor
	scfg.Credentials, scfg.SignIn = tools, tools // per-user and remote servers are the Manager's
	scfg.Site = panel
	sv.Servers = scfg.Tools // the names an agent's tool patterns may use (agent/agentdef.go)
	if rcfg.Tools != nil {  // metrics and spans of tool calls; the decorator passes the images on
		var servers func() []agent.ToolServer
		if scfg.Tools != nil {
			servers = scfg.Tools.Servers
		}
		observed := tel.Tools(rcfg.Tools, content, servers)
		rcfg.Tools, rcfg.ContentTools = observed, observed
	}
	if rcfg.Projects == nil {
		rcfg.Projects = agent.NewProjectIndex() // the project rule's facts, shared by the runner and files (agent/project.go)
	}
	if rcfg.Files, err = newFiles(cfg, a, providers, rcfg.Projects, log); err != nil { // files.go
		return nil, err
	}
	scfg.Files = rcfg.Files
	if h.Configure != nil {
		h.Configure(&rcfg, &scfg)
	}
	if err := a.start(ctx, rcfg, scfg, sv); err != nil {
		return nil, err
	}
	w.App, w.Metrics = a, metrics
	return w, nil
}

// mcpOAuth is how users sign in to remote MCP servers: tokens sealed in
// the database with AGENTIK_SECRET_KEY, or in memory without it.
func mcpOAuth(cfg Settings, st *store.Store, log *slog.Logger) *tool.OAuthOptions {
	o := &tool.OAuthOptions{RedirectURL: cfg.OAuthRedirect}
	if o.RedirectURL == "" {
		o.RedirectURL = "http://" + cfg.Addr + "/agentik/oauth/callback"
	}
	if cfg.SecretKey != "" {
		box, err := secret.New(cfg.SecretKey)
		if err == nil { // the settings' reader checked the key
			o.Box, o.Credentials = box, st
			// Instances sharing the database register one client a
			// server, and each follows a sign-in made on another.
			o.Lock = func(ctx context.Context, name string) (func(), error) {
				_, give, err := st.Lead(ctx, name)
				return give, err
			}
			o.Tell = func(server, user string) {
				body, _ := json.Marshal(signIn{Server: server, User: user})
				if _, err := st.Broadcast(context.Background(), signInTopic, string(body)); err != nil {
					log.Warn("mcp_oauth_sign_in_not_told", "server", server, "err", err)
				}
			}
		}
	} else {
		log.Debug("mcp_oauth_memory_only", "hint", "set AGENTIK_SECRET_KEY to keep remote MCP servers' sign-ins across restarts")
	}
	return o
}

// signInTopic is the broadcast of a user's sign-in to a remote MCP
// server, to the other instances (tool.OAuthOptions.Tell).
const signInTopic = "mcp-signin"

type signIn struct {
	Server string `json:"server"`
	User   string `json:"user"`
}

// lateTopic is the broadcast of a push config stored after its task
// settled, to the instance that delivers (a2a.Handler.TellLate).
const lateTopic = "a2a-late"

// leading runs work under st's lead of name (store.Store.Lead): on one of
// the instances sharing the database at a time, and again each time this
// instance leads after losing the lead, until ctx ends. work returns when
// its ctx ends.
func leading(ctx context.Context, st *store.Store, name string, log *slog.Logger, work func(ctx context.Context)) {
	for ctx.Err() == nil {
		lctx, give, err := st.Lead(ctx, name)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("lead_failed", "work", name, "err", err, "retry_in", time.Second)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		log.Info("leading", "work", name)
		work(lctx)
		if cause := context.Cause(lctx); ctx.Err() == nil {
			log.Warn("lead_lost", "work", name, "err", cause)
		}
		give()
	}
}

// maintain prunes old events now and every pruneEvery, and recovers the
// turns of instances that died (PostgreSQL) every recoverEvery, and at
// once when another instance handed its turns over (recoverNow).
func maintain(ctx context.Context, st *store.Store, runner *agent.Runner, ttl, auditTTL, recoverEvery time.Duration, recoverNow <-chan struct{}, log *slog.Logger) {
	prune := func() {
		n, err := st.Prune(ctx, time.Now().Add(-ttl))
		if err != nil && ctx.Err() == nil {
			log.Error("prune_failed", "err", err)
		} else if n > 0 {
			log.Info("events_pruned", "count", n)
		}
		n, err = runner.Audit().Prune(ctx, auditTTL) // the audit log's own TTL (agent/audit.go)
		if err != nil && ctx.Err() == nil {
			log.Error("audit_prune_failed", "err", err)
		} else if n > 0 {
			log.Info("audit_pruned", "count", n)
		}
	}
	pruneT, recoverT := time.NewTicker(pruneEvery), time.NewTicker(recoverEvery)
	defer pruneT.Stop()
	defer recoverT.Stop()
	prune()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pruneT.C:
			prune()
		case <-recoverT.C:
			if err := runner.Recover(ctx); err != nil && ctx.Err() == nil {
				log.Error("recover_failed", "err", err)
			}
		case <-recoverNow:
			if err := runner.Recover(ctx); err != nil && ctx.Err() == nil {
				log.Error("recover_failed", "err", err)
			}
		}
	}
}

// secretParam matches the query parameters and key=value settings that
// carry secrets: passwords, API keys, tokens.
var secretParam = regexp.MustCompile(`(?i)^(password|passwd|pwd|sslpassword|api[-_]?key|key|token|access[-_]?token|secret|client[-_]?secret|sig|signature)$`)

// secretKV matches a secret in a key=value connection string.
var secretKV = regexp.MustCompile(`(?i)\b(password|sslpassword)\s*=\s*('[^']*'|\S+)`)

// RedactURL hides the secrets of a URL or DSN for logs: the password of
// its userinfo, secret query parameters (?api-key=, ?password=) and
// password= settings.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return secretKV.ReplaceAllString(raw, "$1=xxxxx")
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if secretParam.MatchString(k) {
				q[k] = []string{"xxxxx"}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
