// Package app wires agentik in one place: the store, the broker over it,
// the runner and the server, in the order their arrows allow, so that
// cmd/agentik, cmd/agentik-bench and the tests build the same thing.
//
// The store feeds the broker and the runner (committed events, other
// instances' interrupt requests) while both depend on the store. The cycle
// is broken by two steps instead of late-bound pointers: open opens the
// database and makes the broker over it; start makes the runner and the
// server and only then connects the store to them (store.Store.Start).
// Until then nothing is published, which loses nothing: nobody can be
// subscribed yet, and subscribers replay from the log. Wire (run.go)
// takes both steps, for Run and for every test rig; nothing else does.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/server"
	"github.com/agentik/agentik/internal/store"
)

// config says what open opens.
type config struct {
	DB     string     // the database: a SQLite path or a postgres:// URL
	Mode   store.Mode // store.Options.Mode: the engine's mode (AGENTIK_STORE_MODE)
	Logger *slog.Logger
	Now    agent.Clock // the store's clock; time.Now when nil
	// OnCommit, when set, sees every committed batch after the broker,
	// on the store's writer goroutine (tests use it to act at a commit),
	// decoded from the committed bytes (a cost only when it is set).
	OnCommit func([]agent.AllEvent)
	// Committed, when set, sees every batch this instance commits (the
	// store's OnOwnCommit; on PostgreSQL not the other instances'), and
	// every batch of a temporary conversation (seq 0), undecoded: the
	// metrics' counts (telemetry.Metrics.Committed), which then add up
	// across instances. It runs on the committing goroutine and must not
	// block.
	Committed func([]agent.Encoded)
	// Relay is store.Options.Relay: EXPERIMENTAL, the bench's sketch of a
	// distributed broker (AGENTIK_EXPERIMENTAL_RELAY); "" in production.
	Relay string
	// MaxSchedules caps one user's schedules (agent.Scheduler.MaxPerUser).
	MaxSchedules int
	// ScheduleMinInterval is agent.Scheduler.MinInterval.
	ScheduleMinInterval time.Duration
}

// App is agentik wired: its parts are exported for the callers that need
// one of them (the tools publish through the Broker, the maintenance loop
// prunes the Store).
type App struct {
	Store *store.Store
	// Temps keeps the temp conversations: a Store over a private
	// in-memory database (store.OpenTemp), made by start.
	Temps  *store.Store
	Broker *broker.Broker
	Runner *agent.Runner // set by start
	Server *server.Server
	// Schedules runs the schedules' slots through the Runner (set by start).
	Schedules *agent.Scheduler
	// Inbox lists what waits for each user and answers it (set by start).
	Inbox *agent.Inbox
	// Projects is the projects service (set by start).
	Projects *agent.Projects
	// Shares is the share links service (set by start).
	Shares *agent.Shares
	// Conversations, Agents, Memory and Resources are the services of
	// those nouns (set by start); the Runner keeps the turns.
	Conversations *agent.Conversations
	Agents        *agent.Agents
	Memory        *agent.Memory
	Resources     *agent.ToolResources

	cfg        config
	stopSweep  context.CancelFunc
	sweepDone  sync.WaitGroup
	closeOnce  sync.Once
	closeError error
}

// projectReloadTimeout bounds the reload of a project another instance
// changed (it runs on the store's listener goroutine).
const projectReloadTimeout = 10 * time.Second

// open opens the database and makes the broker over it.
func open(ctx context.Context, cfg config) (*App, error) {
	st, err := store.Open(ctx, cfg.DB, store.Options{Mode: cfg.Mode, Logger: cfg.Logger, Now: cfg.Now, Relay: cfg.Relay})
	if err != nil {
		return nil, err
	}
	return &App{Store: st, Broker: broker.New(st, cfg.Logger), cfg: cfg}, nil
}

// start makes the runner from rc and the server from sc (their store,
// cluster, publisher, broker and runner are filled in here), connects the
// store to them, recovers the turns that died with their process, and
// starts the sweep of idle temp conversations.
func (a *App) start(ctx context.Context, rc agent.Config, sc server.Config, sv services) error {
	rc.Store, rc.Cluster, rc.Publisher, rc.Agents = a.Store, a.Store, a.Broker, a.Store
	rc.Branches, rc.Elicits = a.Store, a.Store // the stored conversations' trees and elicitations (the temp ones' are Temps')
	if rc.Memory == nil {
		rc.Memory = a.Store // long-term memory (agent/memory.go)
	}
	if rc.Search == nil {
		rc.Search = a.Store // memory_search
	}
	if rc.ModelName == "" {
		rc.ModelName = sc.ModelName // answers name the model as the UI does
	}
	if rc.Logger == nil {
		rc.Logger = a.cfg.Logger
	}
	if rc.Users == nil {
		rc.Users = a.Store // nothing runs for a disabled or deleted owner (agent/standing.go)
	}
	if b := rc.Budgets; b != nil {
		bb := &agent.Budgets{Default: b.Default, Users: b.Users, Usage: b.Usage, Now: b.Now, Log: b.Log, Site: b.Site} // kept in the store, per user
		if bb.Users == nil {
			bb.Users = a.Store
		}
		if bb.Usage == nil {
			bb.Usage = a.Store
		}
		rc.Budgets = bb
	}
	sc.Budgets = rc.Budgets // usage reports (agent/budget.go)
	now := rc.Now           // the runner's clock: the idle sweep measures what it dates
	if now == nil {
		now = a.cfg.Now
	}
	tempPublish := a.Broker.PublishEncoded
	if count := a.cfg.Committed; count != nil {
		tempPublish = func(encs []agent.Encoded) {
			count(encs) // a temporary conversation's turns count too
			a.Broker.PublishEncoded(encs)
		}
	}
	temps, err := store.OpenTemp(ctx, store.TempOptions{Config: rc.Temp, Publish: tempPublish, Now: now, Logger: a.cfg.Logger, Mode: a.cfg.Mode})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	a.Temps, rc.Temps = temps, temps
	if rc.Audit == nil {
		rc.Audit = agent.NewAudit(a.Store, now, rc.Logger) // the audit log (agent/audit.go)
	}
	if rc.Site != nil {
		rc.Site.SetAudit(rc.Audit) // the admin panel's changes are audited
	}
	if rc.Projects == nil {
		rc.Projects = agent.NewProjectIndex() // the project rule's facts (agent/project.go)
	}
	a.Broker.UseReach(rc.Projects)
	if rc.Groups == nil {
		rc.Groups = a.Store // what is shared with groups (agent/group.go, access.go)
	}
	a.Runner = agent.NewRunner(rc)
	sc.Runner, sc.Broker, sc.Store = a.Runner, a.Broker, a.Store
	// The store's abilities the server names (server.Config): the
	// database has them all, so none is missing at start.
	sc.Revocations, sc.Users, sc.PasswordStore, sc.Groups = a.Store, a.Store, a.Store, a.Store
	sc.Responses, sc.A2AKV, sc.Peers, sc.Cursors = a.Store, a.Store, a.Store, a.Store
	if err := a.services(rc, &sc, sv); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if a.Projects, err = agent.NewProjects(ctx, agent.ProjectsConfig{Store: a.Store, Runner: a.Runner, Index: rc.Projects, Groups: a.Store, Now: now}); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if sc.Projects == nil {
		sc.Projects = a.Projects
	}
	reloadCtx := context.WithoutCancel(ctx)
	a.Store.OnProject(func(id string) { // another instance changed a project (PostgreSQL)
		rctx, cancel := context.WithTimeout(reloadCtx, projectReloadTimeout)
		defer cancel()
		if err := a.Projects.Reload(rctx, id); err != nil {
			if a.cfg.Logger != nil {
				a.cfg.Logger.Error("project_reload_failed", "project_id", id, "err", err)
			}
		}
	})
	if a.Shares, err = agent.NewShares(agent.SharesConfig{Store: a.Store, Runner: a.Runner, Conversations: a.Conversations, Now: now}); err != nil { // share links (agent/share.go)
		return fmt.Errorf("start: %w", err)
	}
	if sc.Shares == nil {
		sc.Shares = a.Shares
	}
	a.Schedules = &agent.Scheduler{Runner: a.Runner, Store: a.Store, Now: rc.Now, Logger: rc.Logger, Users: rc.Users, MaxPerUser: a.cfg.MaxSchedules, MinInterval: a.cfg.ScheduleMinInterval}
	if sc.Schedules == nil {
		sc.Schedules = a.Schedules
	}
	if sc.Feedback == nil {
		sc.Feedback = agent.NewFeedbacks(a.Runner, a.Store, now) // ratings of answers (agent/feedback.go)
	}
	if sc.Prompts == nil { // the prompt library (agent/savedprompt.go)
		if sc.Prompts, err = agent.NewPromptLibrary(agent.PromptLibraryConfig{Store: a.Store, Projects: a.Projects, Now: now}); err != nil {
			return fmt.Errorf("start: %w", err)
		}
	}
	if sc.Preferences == nil { // each person's settings (agent/preference.go)
		if sc.Preferences, err = agent.NewPreferences(a.Store, a.Runner.Models, now); err != nil {
			return fmt.Errorf("start: %w", err)
		}
	}
	a.Inbox = &agent.Inbox{Runner: a.Runner, Store: a.Store}
	if sc.Inbox == nil {
		sc.Inbox = a.Inbox
	}
	if sc.Logger == nil {
		sc.Logger = a.cfg.Logger
	}
	a.Server = server.New(sc)
	if a.cfg.Committed != nil {
		a.Store.OnOwnCommit(a.cfg.Committed)
	}
	projects := rc.Projects
	publish := func(encs []agent.Encoded) {
		projects.Committed(encs) // before the fan-out: members get the event that moves a chat to them (agent/project.go)
		a.Broker.PublishEncoded(encs)
		a.Runner.Committed(encs) // answers given on other instances (agent/elicit.go)
	}
	if on := a.cfg.OnCommit; on != nil {
		publish = func(encs []agent.Encoded) {
			projects.Committed(encs)
			a.Broker.PublishEncoded(encs)
			a.Runner.Committed(encs)
			evs := make([]agent.AllEvent, 0, len(encs))
			for _, e := range encs {
				if ev, err := e.Decode(); err == nil {
					evs = append(evs, ev)
				}
			}
			on(evs)
		}
	}
	if err := a.Store.Start(ctx, publish, a.Runner.CancelTurn); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Instances that start at once on one database define the code's
	// agents one after the other, each reading what the last wrote
	// (without it two both found an agent missing, and the second's
	// start failed with "slug taken").
	dctx, done, err := a.Store.Lead(ctx, "define agents")
	if err != nil {
		return fmt.Errorf("define agents: %w", err)
	}
	err = a.Agents.Define(dctx)
	done()
	if err != nil {
		return err
	}
	if err := a.Runner.Recover(ctx); err != nil {
		return err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopSweep = stop
	a.sweepDone.Add(1)
	go func() { defer a.sweepDone.Done(); a.Temps.SweepEvery(sctx, rc.Temp.SweepEvery) }()
	a.sweepDone.Add(1)
	go func() { defer a.sweepDone.Done(); a.Schedules.Run(sctx) }() // schedules' slots (agent/schedule.go)
	if rc.Files != nil {
		a.sweepDone.Add(1)
		go func() { defer a.sweepDone.Done(); rc.Files.Run(sctx) }() // ingestion of files (agent/file.go)
	}
	return nil
}

// services says what the services of the nouns take besides the store
// and the runner.
type services struct {
	CodeAgents []agent.AgentDef       // AGENTIK_AGENTS, stored by Agents.Define
	Servers    agent.ToolServerLister // the configured tool servers; nil: none
}

// services makes the services of the nouns over the store's abilities
// and the runner, and gives them to the server: a missing ability fails
// here, at start, not in a request.
func (a *App) services(rc agent.Config, sc *server.Config, sv services) error {
	var err error
	if a.Conversations, err = agent.NewConversations(agent.ConversationsConfig{Runner: a.Runner,
		Lister: a.Store, Versions: a.Store, Sources: a.Store, Search: a.Store}); err != nil {
		return err
	}
	if a.Agents, err = agent.NewAgents(agent.AgentsConfig{Runner: a.Runner, Store: rc.Agents,
		Code: sv.CodeAgents, Servers: sv.Servers, Audit: rc.Audit}); err != nil {
		return err
	}
	memory := rc.Memory
	if rc.NoMemory {
		memory = nil // AGENTIK_MEMORY=off
	}
	if a.Memory, err = agent.NewMemory(a.Runner, memory); err != nil {
		return err
	}
	a.Resources = agent.NewToolResources(rc.Resources, rc.Prompts)
	sc.Conversations, sc.Agents, sc.Memory, sc.Resources = a.Conversations, a.Agents, a.Memory, a.Resources
	return nil
}

// Close stops the runner (its turns end as interrupted and are persisted),
// ends the server's streams, and closes the store, within ctx.
func (a *App) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		var errs []error
		if a.stopSweep != nil {
			a.stopSweep()
			a.sweepDone.Wait()
		}
		if a.Runner != nil {
			errs = append(errs, a.Runner.Close(ctx))
		}
		if a.Server != nil {
			errs = append(errs, a.Server.Shutdown(ctx))
		}
		errs = append(errs, a.Store.Close())
		if a.Temps != nil {
			errs = append(errs, a.Temps.Close())
		}
		a.closeError = errors.Join(errs...)
	})
	return a.closeError
}
