package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentik/agentik/internal/a2a"
	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/app"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/secret"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
	"github.com/agentik/agentik/internal/telemetry"
	"github.com/agentik/agentik/internal/tool"
	"github.com/agentik/agentik/internal/webhook"
)

// shutdownTimeout bounds a graceful stop: running turns end as interrupted
// and are persisted, streams close, the event writer flushes.
const shutdownTimeout = 8 * time.Second

// pruneEvery is how often events older than the TTL are deleted.
const pruneEvery = time.Hour

// recoverEvery is how often turns orphaned by a dead instance are ended
// (with several instances on PostgreSQL; a single one recovers at start).
const recoverEvery = 30 * time.Second

// run is the whole program; main only calls it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] { // the client modes
		case "tail":
			return runTail(ctx, args[1:], getenv, stdout, stderr)
		case "chat":
			interrupts := make(chan os.Signal, 1)
			signal.Notify(interrupts, os.Interrupt)
			defer signal.Stop(interrupts)
			return runChat(ctx, args[1:], getenv, stdin, stdout, stderr, interrupts)
		case "export":
			return runExport(ctx, args[1:], getenv, stdout, stderr)
		case "import":
			return runImport(ctx, args[1:], getenv, stdout, stderr)
		case "user":
			return runUser(ctx, args[1:], getenv, stdout, stderr)
		case "schedule":
			return runSchedule(ctx, args[1:], getenv, stdout, stderr)
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, version())
			return nil
		}
	}
	cfg, err := parseConfig(args, getenv, helpOut(args, stdout, stderr))
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return serve(ctx, cfg, getenv, stderr)
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogJSON {
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts)))
}

// serve runs the server until ctx is cancelled.
func serve(ctx context.Context, cfg config, getenv func(string) string, stderr io.Writer) error {
	log := newLogger(cfg, stderr)

	// Listen first: a busy port fails at once.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()

	var a *app.App
	metrics := telemetry.NewMetrics(telemetry.Sources{
		Subscriptions: func() int { return a.Broker.Subscribers() },
		Drops:         func() map[string]int64 { return a.Broker.Drops() },
		HumanLoad:     func(ctx context.Context) (int, int, error) { return a.Store.HumanLoad(ctx) },
	})
	tracing, err := telemetry.NewTracing(ctx, getenv, "")
	if err != nil {
		return err
	}
	var tracer trace.Tracer
	if tracing != nil {
		tracer = tracing.Tracer()
		defer func() { // after the app closed: the turns' last spans are flushed
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if err := tracing.Shutdown(sctx); err != nil {
				log.Warn("trace_flush_failed", "err", err)
			}
		}()
		log.Info("tracing_on")
	}
	tel := telemetry.New(telemetry.Options{Metrics: metrics, Tracer: tracer, Logger: log})
	a, err = app.Open(ctx, app.Config{DB: cfg.DB, Logger: log, OnCommit: func(evs []agent.AllEvent) { metrics.Appended(len(evs)) }})
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if e := a.Close(sctx); e != nil {
			log.Error("shutdown_failed", "err", e)
		}
	}()
	st, b := a.Store, a.Broker

	var model agent.Model
	modelName := ""
	unavailable := ""
	notice := &modelNotice{} // what the UI's banner says about the model
	var mcfg llm.Config
	var ok bool
	var providers *llm.Providers // the models conversations pick from
	if cfg.Providers != "" && !cfg.Demo {
		pcfg, err := llm.LoadProviders(cfg.Providers, getenv)
		if err != nil {
			return err
		}
		if providers, err = llm.NewProviders(pcfg, llm.ProvidersOptions{Logger: log, ContextWindow: cfg.ContextWindow}); err != nil {
			return err
		}
		model, modelName = tel.Model(providers, pcfg.Default), pcfg.Default
		log.Info("providers_configured", "providers", len(pcfg.Providers), "default", pcfg.Default)
	} else if cfg.Demo {
		demo, err := startDemo(log)
		if err != nil {
			return err
		}
		defer demo.close()
		mcfg, ok = demo.config, true
		notice.set(demoNotice)
	} else {
		mcfg, ok, err = llm.Detect(ctx, getenv, nil)
	}
	if providers != nil {
		ok = false // the providers file says it all
	}
	if err != nil {
		// A local model server that is not up yet should not keep agentik
		// down: start without a model and say why on every send.
		log.Warn("model_unavailable", "err", err)
		unavailable = "the model is not available: " + err.Error() + "; fix the model settings and restart agentik"
		notice.set("Check the model settings: " + err.Error() + ".")
		ok = false
	}
	if ok {
		mcfg.Logger = log
		if _, err := llm.New(mcfg); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		name := llm.ProviderName(mcfg)
		if cfg.Demo {
			name = "demo"
		}
		providers, err = llm.NewProviders(llm.SingleProvider(name, mcfg), llm.ProvidersOptions{Logger: log, HTTPClient: mcfg.HTTPClient, ContextWindow: cfg.ContextWindow})
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		model, modelName = tel.Model(providers, mcfg.Model), mcfg.Model
		log.Info("model_configured", "base_url", redactURL(mcfg.BaseURL), "model", modelName)
		notice.probe(ctx, mcfg, log) // in the background: a slow endpoint does not delay the start
		defer notice.wait()
	} else if providers == nil {
		log.Warn("no_model_configured", "hint", "set OPENAI_BASE_URL or OPENAI_API_KEY (and OPENAI_MODEL), or run Ollama on 127.0.0.1:11434")
	}

	var tools *tool.Manager
	rcfg := agent.Config{Model: model, SystemPrompt: cfg.SystemPrompt, MaxAnswerBytes: cfg.MaxAnswerBytes, Logger: log, Unavailable: unavailable,
		TurnContext: tel.TurnContext, SummaryModel: cfg.SummaryModel, Titles: cfg.Titles, ApprovalTimeout: cfg.ApprovalTimeout,
		Budgets: &agent.Budgets{Default: cfg.DefaultBudget, Log: log.Warn}} // app.Start gives it the store
	if providers != nil {
		rcfg.Catalog = providers
		rcfg.Windows = providers // the window follows each conversation's model
		checkCtx, stopCheck := context.WithCancel(ctx)
		checked := make(chan struct{})
		go func() { defer close(checked); providers.Run(checkCtx) }()
		defer func() { stopCheck(); <-checked }()
	}
	if rcfg.Titles == "" && model != nil && !cfg.Demo {
		rcfg.Titles = agent.TitlesModel
	}
	var serverNames []string
	if cfg.MCPConfig != "" {
		tcfg, err := tool.LoadConfig(cfg.MCPConfig, getenv)
		if err != nil {
			return err
		}
		for _, s := range tcfg.Servers {
			serverNames = append(serverNames, s.Name)
		}
		onChange := func(s agent.ToolServer) { b.Publish(agent.ToolServerEvent(s, time.Now())) }
		onResource := func(server, uri string) { b.Publish(agent.ResourceUpdatedEvent(server, uri, time.Now())) }
		tools, err = tool.Start(ctx, tcfg, tool.Options{Logger: log, OnChange: onChange, OnResourceUpdated: onResource, OAuth: mcpOAuth(cfg, st, log)})
		if err != nil {
			return fmt.Errorf("start tools: %w", err)
		}
		defer tools.Close()
		rcfg.Tools, rcfg.Approval = tools, tools.NeedsApproval
		rcfg.Resources, rcfg.Prompts = tools, tools
	}
	if cfg.Demo {
		rcfg.Tools = &demoTools{inner: tools}
	}
	if cfg.Agents != "" {
		var remotes map[string]a2a.RemoteAgent
		if rcfg.CodeAgents, remotes, err = loadAgents(cfg.Agents, getenv, serverNames); err != nil {
			return err
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
	}
	if tools != nil {
		scfg.Tools = tools
	}
	if dt, ok := rcfg.Tools.(*demoTools); ok {
		scfg.Tools = dt
	}
	if rcfg.Tools != nil { // metrics and spans of tool calls
		rcfg.Tools = tel.Tools(rcfg.Tools, scfg.Tools.Servers)
	}
	if err := a.Start(ctx, rcfg, scfg); err != nil {
		return err
	}
	runner, srv := a.Runner, a.Server
	hs := &http.Server{Handler: srv, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	srv.Configure(hs)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	pruneDone, watchDone := make(chan struct{}), make(chan struct{})
	pruneCtx, stopPrune := context.WithCancel(ctx)
	go func() { defer close(pruneDone); maintain(pruneCtx, st, runner, cfg.EventTTL, log) }()
	go func() { defer close(watchDone); metrics.WatchTurns(pruneCtx, b) }()
	var hooks sync.WaitGroup
	for _, u := range cfg.Webhooks {
		hooks.Go(func() {
			webhook.Run(pruneCtx, webhook.Config{URL: u, Secret: cfg.WebhookSecret, Log: b, Cursors: st, Logger: log,
				Head: func(ctx context.Context) (int64, error) { _, h, err := st.Bounds(ctx); return h, err }})
		})
	}
	// A2A push notifications: one deliverer of the tasks' configs.
	hooks.Go(func() {
		push := a2a.New(a2a.Config{Runner: runner, Broker: b, KV: st, Logger: log})
		(&a2a.PushDeliverer{Handler: push, Secret: cfg.WebhookSecret, Logger: log}).Run(pruneCtx)
	})
	log.Info("listening", "addr", ln.Addr().String(), "db", redactURL(cfg.DB))

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	stopPrune()
	<-pruneDone
	<-watchDone
	hooks.Wait()
	log.Info("shutting_down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if e := runner.Close(sctx); e != nil {
		log.Error("runner_close_failed", "err", e)
	}
	if e := a.Server.Shutdown(sctx); e != nil {
		log.Error("streams_close_failed", "err", e)
	}
	if e := hs.Shutdown(sctx); e != nil {
		log.Error("http_shutdown_failed", "err", e)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// maintain prunes old events now and every pruneEvery, and recovers the
// turns of instances that died (PostgreSQL) every recoverEvery.
// mcpOAuth is how users sign in to remote MCP servers: tokens sealed in
// the database with AGENTIK_SECRET_KEY, or in memory without it.
func mcpOAuth(cfg config, st *store.Store, log *slog.Logger) *tool.OAuthOptions {
	o := &tool.OAuthOptions{RedirectURL: cfg.OAuthRedirect}
	if o.RedirectURL == "" {
		o.RedirectURL = "http://" + cfg.Addr + "/agentik/oauth/callback"
	}
	if cfg.SecretKey != "" {
		box, err := secret.New(cfg.SecretKey)
		if err == nil { // parseConfig checked the key
			o.Box, o.Credentials = box, st
		}
	} else {
		log.Debug("mcp_oauth_memory_only", "hint", "set AGENTIK_SECRET_KEY to keep remote MCP servers' sign-ins across restarts")
	}
	return o
}

func maintain(ctx context.Context, st *store.Store, runner *agent.Runner, ttl time.Duration, log *slog.Logger) {
	prune := func() {
		n, err := st.Prune(ctx, time.Now().Add(-ttl))
		if err != nil && ctx.Err() == nil {
			log.Error("prune_failed", "err", err)
		} else if n > 0 {
			log.Info("events_pruned", "count", n)
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
		}
	}
}
