package agent

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultAgent is the slug of the agent made from the server's own
// configuration (AGENTIK_SYSTEM_PROMPT, the default model, every tool): the
// agent of every conversation that names none, including those of a
// database made before agents.
const DefaultAgent = "agentik"

// Visibilities of an agent.
const (
	VisibilityPrivate = "private" // its owner only (and admins)
	VisibilityShared  = "shared"  // everyone may use it; only its owner edits it
	VisibilityGroup   = "group"   // the members of its groups may use it; only its owner edits it
)

// Approval overrides of an agent: "" keeps the tool servers' policy.
const (
	ApprovalAlways = "always" // every tool call waits for a person's decision
	ApprovalNever  = "never"  // no tool call waits
)

// DelegatePrefix starts the tool name by which an agent delegates to
// another: agent__<slug>, with one argument, the message.
const DelegatePrefix = "agent__"

// MaxDelegationDepth is how deep delegation nests: a conversation started
// by a person is depth 0, the child it delegates to depth 1, and a
// conversation at this depth delegates no further.
const MaxDelegationDepth = 3

// Limits of an agent definition.
const (
	MaxAgentNameBytes = 200
	MaxAgentDescBytes = 2000
	MaxAgentTools     = 100
	MaxAgentStarters  = 10
	MaxStarterBytes   = 500
)

// slugPattern is a URL-safe slug: lowercase letters, digits and inner
// hyphens, 1 to 40 of them (so agent__<slug> fits a tool name).
var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$`)

// AgentDef is one version of an agent: a stored definition of who answers
// a conversation, with what instructions, model and tools.
type AgentDef struct {
	Slug         string   `json:"slug"`
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Instructions string   `json:"instructions"` // its system prompt; "" = the server's
	Model        string   `json:"model"`        // "" = the default model
	Params       *Params  `json:"params,omitempty"`
	Tools        []string `json:"tools"` // patterns of tool names (github__*, *), agent__<slug> delegates, and -<pattern> exclusions (-memory_* turns memory off)
	Approval     string   `json:"approval"`
	Visibility   string   `json:"visibility"`
	// Groups are the groups an agent of visibility "group" is shared with.
	Groups   []string `json:"groups,omitempty"`
	Owner    string   `json:"owner"` // a user id
	Starters []string `json:"starters"`
	// Knowledge are the knowledge bases its turns search (file_search).
	Knowledge []string `json:"knowledge,omitempty"`
	// A2A is the URL of a remote agent's A2A card (remote.go): another
	// runtime answers this agent's turns. Only agents defined as code have
	// one (their credentials stay in the configuration).
	A2A     string `json:"a2a,omitempty"`
	Version int    `json:"version"`
	// ReadOnly marks an agent defined as code (AGENTIK_AGENTS, or the
	// default): the API and the UI do not change it.
	ReadOnly bool `json:"read_only"`
	// RenamedFrom is the slug an agent made in the UI or the API had
	// before an agent defined as code took it (DefineAgents): its owner
	// reads here why the agent moved.
	RenamedFrom string    `json:"renamed_from,omitempty"`
	Deleted     bool      `json:"deleted,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// AgentChange is a create or an edit of an agent: nil fields stay as they
// are (on create: their defaults).
type AgentChange struct {
	Slug         *string   `json:"slug,omitempty"`
	Name         *string   `json:"name,omitempty"`
	Description  *string   `json:"description,omitempty"`
	Instructions *string   `json:"instructions,omitempty"`
	Model        *string   `json:"model,omitempty"`
	Params       *Params   `json:"params,omitempty"`
	Tools        *[]string `json:"tools,omitempty"`
	Approval     *string   `json:"approval,omitempty"`
	Visibility   *string   `json:"visibility,omitempty"`
	Groups       *[]string `json:"groups,omitempty"`
	Starters     *[]string `json:"starters,omitempty"`
	Knowledge    *[]string `json:"knowledge,omitempty"`
}

// AgentStore keeps agent definitions and every version of them. The
// database (package store) implements it; a runner without one keeps them
// in memory.
type AgentStore interface {
	// Agents returns the latest version of every agent, deleted ones
	// included (marked), in slug order.
	Agents(ctx context.Context) ([]AgentDef, error)
	// Agent returns the latest version of one agent, or ErrNotFound.
	Agent(ctx context.Context, slug string) (AgentDef, error)
	// AgentVersion returns one version of an agent, or ErrNotFound.
	AgentVersion(ctx context.Context, slug string, version int) (AgentDef, error)
	// SaveAgent stores def as version def.Version: version 1 creates the
	// agent (conflict when the slug is taken, deleted agents included);
	// any other must follow the latest stored version (conflict when an
	// edit came first). Deleted marks the agent deleted.
	SaveAgent(ctx context.Context, def AgentDef) error
	// RenameAgent moves agent from, with every version, to def.Slug and
	// stores def as its next version; whatever names from then names
	// def.Slug: conversations, schedules, memory, and the delegations of
	// agents not defined as code (each as its next version). One
	// transaction: all of it or nothing.
	RenameAgent(ctx context.Context, from string, def AgentDef) error
}

// Parent links a delegated child conversation to the tool call of its
// parent that started it.
type Parent struct {
	ConversationID string `json:"conversation_id"`
	CallID         string `json:"call_id"`
}

// agentVisible reports whether ctx's principal may see and use agent d:
// the rule of access.go (viewer): a shared agent is everyone's, a private
// one its owner's, one shared with groups their members' too; admins see
// all.
func (r *Runner) agentVisible(ctx context.Context, d AgentDef) bool {
	return r.viewer(ctx).sees(d.Visibility, d.Owner, d.Groups)
}

// agentEditable reports whether ctx's principal may change agent d.
func agentEditable(ctx context.Context, d AgentDef) bool {
	scope := Scope(ctx)
	return scope == "" || d.Owner == scope
}

// agents is the runner's agent store: the configured one, or memory
// (NewRunner); the turns read the agent they run as from it.
func (r *Runner) agents() AgentStore { return r.cfg.Agents }

// AgentsConfig is what the agents service takes.
type AgentsConfig struct {
	Runner *Runner    // the centre: the rule of who sees what, the models, tools and knowledge an agent names
	Store  AgentStore // the stored definitions (the Runner's Config.Agents); required
	Code   []AgentDef // the agents defined as code (AGENTIK_AGENTS), stored by Define
	// Servers lists the configured tool servers, whose names an agent's
	// tool patterns may use before their tools are listed; nil: none.
	Servers ToolServerLister
	Audit   *Audit // nil: nothing is recorded
}

// ToolServerLister lists the configured tool servers (package tool's
// Manager).
type ToolServerLister interface {
	Servers() []ToolServer
}

// Agents is the agents service: the definitions people list, make, change
// and delete, and those defined as code. The turns read the agent they
// run as through the Runner (agentturn.go), under the same rule.
type Agents struct {
	cfg   AgentsConfig
	r     *Runner
	store AgentStore
}

// NewAgents makes the agents service; a missing Runner or Store fails.
func NewAgents(cfg AgentsConfig) (*Agents, error) {
	if cfg.Runner == nil || cfg.Store == nil {
		return nil, errors.New("agents: the Runner and an AgentStore are required")
	}
	return &Agents{cfg: cfg, r: cfg.Runner, store: cfg.Store}, nil
}

// defaultAgent is the agent made from the runner's configuration.
func (r *Runner) defaultAgent() AgentDef {
	return AgentDef{Slug: DefaultAgent, Name: "agentik", Description: "The server's own agent: its system prompt, its default model and every tool.",
		Instructions: r.SystemPrompt(), Tools: []string{"*"}, Visibility: VisibilityShared, Owner: LocalUser, Starters: []string{}, ReadOnly: true}
}

// Define stores the agents defined as code: the default agent (unless
// AgentsConfig.Code defines one of its slug) and Code (AGENTIK_AGENTS).
// Each whose definition changed since the last start gets a new version;
// they are read-only. Call it once before serving.
func (a *Agents) Define(ctx context.Context) error {
	r := a.r
	defs := slices.Clone(a.cfg.Code)
	if !slices.ContainsFunc(defs, func(d AgentDef) bool { return d.Slug == DefaultAgent }) {
		defs = append([]AgentDef{r.defaultAgent()}, defs...)
	}
	// Code-defined slugs win: an agent made in the UI or the API that holds
	// one moves to a free slug first.
	for _, d := range defs {
		old, err := a.store.Agent(ctx, d.Slug)
		if err == nil && !old.ReadOnly {
			err = a.yieldSlug(ctx, old, defs)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("define agent %s: %w", d.Slug, err)
		}
	}
	for _, d := range defs {
		d.ReadOnly = true
		if d.Visibility == "" {
			d.Visibility = VisibilityShared
		}
		if d.Owner == "" {
			d.Owner = LocalUser
		}
		d.Tools, d.Starters = nonNil(d.Tools), nonNil(d.Starters)
		if err := r.checkModel(d.Model); err != nil {
			return fmt.Errorf("agent %s: %w", d.Slug, err)
		}
		old, err := a.store.Agent(ctx, d.Slug)
		switch {
		case errors.Is(err, ErrNotFound):
			d.Version = 1
		case err != nil:
			return fmt.Errorf("define agent %s: %w", d.Slug, err)
		case sameDefinition(old, d):
			continue
		default:
			d.Version, d.CreatedAt = old.Version+1, old.CreatedAt
		}
		now := r.now()
		if d.CreatedAt.IsZero() {
			d.CreatedAt = now
		}
		d.UpdatedAt = now
		if err := a.store.SaveAgent(ctx, d); err != nil {
			return fmt.Errorf("define agent %s: %w", d.Slug, err)
		}
	}
	// An agent the code no longer defines is marked deleted: its
	// conversations keep its last version.
	stored, err := a.store.Agents(ctx)
	if err != nil {
		return fmt.Errorf("define agents: %w", err)
	}
	for _, o := range stored {
		if o.ReadOnly && !o.Deleted && !slices.ContainsFunc(defs, func(d AgentDef) bool { return d.Slug == o.Slug }) {
			o.Version++
			o.Deleted, o.UpdatedAt = true, r.now()
			if err := a.store.SaveAgent(ctx, o); err != nil {
				return fmt.Errorf("define agents: remove %s: %w", o.Slug, err)
			}
		}
	}
	return nil
}

// yieldSlug moves old, an agent made in the UI or the API, off the slug an
// agent of defs takes, to the first free slug-2, slug-3… (none of defs'
// either), with its versions and whatever names it (AgentStore.RenameAgent).
// Its new version says renamed_from; the log says agent_renamed.
func (a *Agents) yieldSlug(ctx context.Context, old AgentDef, defs []AgentDef) error {
	r := a.r
	reserved := make([]string, 0, len(defs))
	for _, d := range defs {
		reserved = append(reserved, d.Slug)
	}
	to, err := a.freeSlug(ctx, old.Slug, reserved...)
	if err != nil {
		return err
	}
	d := old
	d.Slug, d.RenamedFrom, d.Version, d.UpdatedAt = to, old.Slug, old.Version+1, r.now()
	if err := a.store.RenameAgent(ctx, old.Slug, d); err != nil {
		return fmt.Errorf("rename agent %s to %s: %w", old.Slug, to, err)
	}
	r.log.Warn("agent_renamed", "from", old.Slug, "to", to, "owner", old.Owner, "reason", "AGENTIK_AGENTS defines the slug")
	return nil
}

// CheckCodeAgents checks agents defined as code before anything starts:
// fields, tool patterns against the configured tool servers' names, and
// delegation (unknown agents, cycles, depth). The error names the agent
// and the field.
func CheckCodeAgents(defs []AgentDef, servers []string) error {
	seen := map[string]bool{}
	for i, d := range defs {
		if !slugPattern.MatchString(d.Slug) {
			return fmt.Errorf("agents[%d].slug %q must be 1 to 40 lowercase letters, digits or inner hyphens", i, d.Slug)
		}
		if seen[d.Slug] {
			return fmt.Errorf("agents[%d].slug %q is defined twice", i, d.Slug)
		}
		seen[d.Slug] = true
		if err := checkAgentFields(d); err != nil {
			return fmt.Errorf("agent %s: %w", d.Slug, err)
		}
	}
	known := map[string]AgentDef{}
	for _, d := range defs {
		known[d.Slug] = d
	}
	for _, d := range defs {
		for j, p := range d.Tools {
			if slug, ok := strings.CutPrefix(p, DelegatePrefix); ok {
				if _, ok := known[slug]; !ok {
					return fmt.Errorf("agent %s: tools[%d] delegates to %q, which AGENTIK_AGENTS does not define", d.Slug, j, slug)
				}
				continue
			}
			p = strings.TrimPrefix(p, ExcludePrefix)
			if err := checkPattern(p); err != nil {
				return fmt.Errorf("agent %s: tools[%d]: %w", d.Slug, j, err)
			}
			if p == "*" || slices.ContainsFunc(memoryTools, func(n string) bool { m, _ := path.Match(p, n); return m }) {
				continue
			}
			server, _, ok := strings.Cut(p, "__")
			if !ok || strings.ContainsAny(server, "*?[") || !slices.Contains(servers, server) {
				return fmt.Errorf("agent %s: tools[%d] %q names no configured tool server (the servers of the mcp config are: %s)", d.Slug, j, p, strings.Join(servers, ", "))
			}
		}
		if err := checkGraph(d, known); err != nil {
			return fmt.Errorf("agent %s: %w", d.Slug, err)
		}
	}
	return nil
}

// List lists the agents the caller may use (not deleted), by slug.
func (a *Agents) List(ctx context.Context) ([]AgentDef, error) {
	return a.r.agentList(ctx)
}

// agentList lists the agents the caller may use (not deleted), by slug.
func (r *Runner) agentList(ctx context.Context) ([]AgentDef, error) {
	all, err := r.agents().Agents(ctx)
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	out := []AgentDef{}
	v := r.viewer(ctx) // the caller's groups are read once
	for _, d := range all {
		if !d.Deleted && v.sees(d.Visibility, d.Owner, d.Groups) {
			out = append(out, d)
		}
	}
	return out, nil
}

// Get returns the latest version of an agent the caller may see (a
// deleted one too, marked), or not_found.
func (a *Agents) Get(ctx context.Context, slug string) (AgentDef, error) {
	return a.r.agent(ctx, slug)
}

// agent is Agents.Get: the agent a conversation, a memory or a schedule
// names, as ctx's principal may see it.
func (r *Runner) agent(ctx context.Context, slug string) (AgentDef, error) {
	d, err := r.agents().Agent(ctx, slug)
	if errors.Is(err, ErrNotFound) && slug == DefaultAgent {
		return r.defaultAgent(), nil // DefineAgents not called (tests)
	}
	if errors.Is(err, ErrNotFound) {
		return AgentDef{}, agentNotFound(slug) // as a hidden one answers
	}
	if err != nil {
		return AgentDef{}, err
	}
	if !r.agentVisible(ctx, d) {
		return AgentDef{}, agentNotFound(slug)
	}
	return d, nil
}

// Models are the model ids of the agents the caller may use
// ("agent/<slug>"), for lists of models such as /v1's. The default agent
// is not among them: it answers by the default model's own name, so a
// server without agents lists what it listed before.
func (a *Agents) Models(ctx context.Context) []string {
	ds, err := a.r.agentList(ctx)
	if err != nil {
		a.r.log.Warn("agents_unreadable", "err", err)
		return nil
	}
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		if d.Slug != DefaultAgent {
			out = append(out, AgentModelPrefix+d.Slug)
		}
	}
	return out
}

func agentNotFound(slug string) error {
	return Errorf(CodeNotFound, "agent %q not found; GET /agentik/agents lists them", Shorten(slug, 60))
}

// Create stores a new agent owned by the caller, as version 1.
func (a *Agents) Create(ctx context.Context, ch AgentChange) (AgentDef, error) {
	r := a.r
	derived := ch.Slug == nil || *ch.Slug == ""
	if derived {
		if ch.Name == nil || SlugOf(*ch.Name) == "" {
			return AgentDef{}, Errorf(CodeBadRequest, "slug or name is required: a slug is 1 to 40 lowercase letters, digits or inner hyphens, e.g. \"researcher\", and one is made from a name with letters or digits (\"Travel Planner\" makes \"travel-planner\")")
		}
		slug := SlugOf(*ch.Name)
		ch.Slug = &slug
	}
	if ch.Name == nil {
		ch.Name = ch.Slug
	}
	now := r.now()
	d := AgentDef{Slug: *ch.Slug, Owner: PrincipalFrom(ctx).UserID, Visibility: VisibilityPrivate, Version: 1, CreatedAt: now, UpdatedAt: now}
	ch.apply(&d)
	if !slugPattern.MatchString(d.Slug) {
		return AgentDef{}, Errorf(CodeBadRequest, "slug %q is not URL-safe: use 1 to 40 lowercase letters, digits or inner hyphens, e.g. \"researcher\"", Shorten(d.Slug, 60))
	}
	if o, err := a.store.Agent(ctx, d.Slug); err == nil {
		if r.agentVisible(ctx, o) && !derived {
			return AgentDef{}, Errorf(CodeConflict, "slug %q is taken: choose another slug", d.Slug)
		}
		// Another member's private agent: not revealed by a conflict; the
		// new agent takes the first free suffixed slug, and the answer
		// says which.
		if d.Slug, err = a.freeSlug(ctx, d.Slug); err != nil {
			return AgentDef{}, err
		}
	} else if !errors.Is(err, ErrNotFound) {
		return AgentDef{}, fmt.Errorf("create agent: %w", err)
	}
	if err := a.checkAgent(ctx, d); err != nil {
		return AgentDef{}, err
	}
	if err := a.store.SaveAgent(ctx, d); err != nil {
		if errors.Is(err, ErrConflict) {
			return AgentDef{}, Errorf(CodeConflict, "slug %q is taken: choose another slug", d.Slug)
		}
		return AgentDef{}, fmt.Errorf("create agent: %w", err)
	}
	a.cfg.Audit.Record(ctx, AuditAgentCreated, d.Slug, map[string]any{"version": d.Version})
	return d, nil
}

// SlugOf is the slug made from an agent's name when none is given: its
// ASCII letters and digits, lowercased, each other run of characters one
// hyphen, cut to 40 ("Travel Planner" → "travel-planner"); "" when the
// name has no letter or digit. assets/src/agents.js slugOf writes the
// same as a name is typed.
func SlugOf(name string) string {
	var b strings.Builder
	hyphen := false
	for _, c := range strings.ToLower(name) {
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(c)
			continue
		}
		hyphen = true
	}
	return strings.TrimRight(b.String()[:min(b.Len(), 40)], "-")
}

// freeSlug is the first of slug-2, slug-3… that no agent holds and that is
// not reserved (cut to fit the slug's 40 characters).
func (a *Agents) freeSlug(ctx context.Context, slug string, reserved ...string) (string, error) {
	for n := 2; n < 1000; n++ {
		suffix := fmt.Sprintf("-%d", n)
		base := strings.TrimRight(slug[:min(len(slug), 40-len(suffix))], "-")
		try := base + suffix
		if slices.Contains(reserved, try) {
			continue
		}
		if _, err := a.store.Agent(ctx, try); errors.Is(err, ErrNotFound) {
			return try, nil
		} else if err != nil {
			return "", fmt.Errorf("create agent: %w", err)
		}
	}
	return "", Errorf(CodeConflict, "slug %q is taken: choose another slug", slug)
}

// Update stores an edit of an agent as its next version.
func (a *Agents) Update(ctx context.Context, slug string, ch AgentChange) (AgentDef, error) {
	r := a.r
	d, err := a.editable(ctx, slug)
	if err != nil {
		return AgentDef{}, err
	}
	if ch.Slug != nil && *ch.Slug != slug {
		return AgentDef{}, Errorf(CodeBadRequest, "slug cannot change (conversations and delegates name the agent by it); create a new agent instead")
	}
	ch.apply(&d)
	d.Version++
	d.UpdatedAt = r.now()
	if err := a.checkAgent(ctx, d); err != nil {
		return AgentDef{}, err
	}
	if err := a.store.SaveAgent(ctx, d); err != nil {
		return AgentDef{}, fmt.Errorf("update agent: %w", err)
	}
	a.cfg.Audit.Record(ctx, AuditAgentUpdated, d.Slug, map[string]any{"version": d.Version})
	return d, nil
}

// Delete marks an agent deleted: it leaves the lists, nobody starts a
// conversation on it, and the conversations that use it keep running on
// its last version.
func (a *Agents) Delete(ctx context.Context, slug string) error {
	r := a.r
	d, err := a.editable(ctx, slug)
	if err != nil {
		return err
	}
	all, err := a.store.Agents(ctx)
	if err != nil {
		return fmt.Errorf("delete agent: %w", err)
	}
	for _, o := range all {
		if !o.Deleted && o.Slug != slug && slices.Contains(o.Tools, DelegatePrefix+slug) {
			return Errorf(CodeConflict, "agent %q delegates to %q: remove %s%s from its tools first", o.Slug, slug, DelegatePrefix, slug)
		}
	}
	d.Version++
	d.Deleted = true
	d.UpdatedAt = r.now()
	if err := a.store.SaveAgent(ctx, d); err != nil {
		return fmt.Errorf("delete agent: %w", err)
	}
	a.cfg.Audit.Record(ctx, AuditAgentDeleted, d.Slug, map[string]any{"version": d.Version})
	return nil
}

// editable is the latest version of an agent the caller may change.
func (a *Agents) editable(ctx context.Context, slug string) (AgentDef, error) {
	d, err := a.r.agent(ctx, slug)
	if err != nil {
		return AgentDef{}, err
	}
	if d.Deleted {
		return AgentDef{}, agentNotFound(slug)
	}
	if d.ReadOnly {
		return AgentDef{}, Errorf(CodeForbidden, "agent %q is defined as code (AGENTIK_AGENTS or the server's configuration); change it there", slug)
	}
	if !agentEditable(ctx, d) {
		return AgentDef{}, Errorf(CodeForbidden, "agent %q belongs to another user; only its owner changes it", slug)
	}
	return d, nil
}

func (ch AgentChange) apply(d *AgentDef) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	set(&d.Name, ch.Name)
	set(&d.Description, ch.Description)
	if ch.Instructions != nil {
		d.Instructions = *ch.Instructions
	}
	set(&d.Model, ch.Model)
	if ch.Params != nil {
		d.Params = ch.Params
		if ch.Params.empty() {
			d.Params = nil
		}
	}
	if ch.Tools != nil {
		d.Tools = slices.Clone(*ch.Tools)
	}
	set(&d.Approval, ch.Approval)
	set(&d.Visibility, ch.Visibility)
	if ch.Starters != nil {
		d.Starters = slices.Clone(*ch.Starters)
	}
	if ch.Knowledge != nil {
		d.Knowledge = slices.Clone(*ch.Knowledge)
	}
	if ch.Groups != nil {
		d.Groups = sortedIDs(*ch.Groups)
	}
	if d.Visibility != VisibilityGroup {
		d.Groups = nil // shared with groups only while its visibility says so
	}
	d.Tools, d.Starters = nonNil(d.Tools), nonNil(d.Starters)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkAgentFields checks what needs no other agent or tool: lengths,
// enums, params.
func checkAgentFields(d AgentDef) error {
	if d.Name == "" {
		return Errorf(CodeBadRequest, "name must not be empty")
	}
	if len(d.Name) > MaxAgentNameBytes || !utf8.ValidString(d.Name) {
		return Errorf(CodeBadRequest, "name must be valid UTF-8 of at most %d bytes", MaxAgentNameBytes)
	}
	if len(d.Description) > MaxAgentDescBytes || !utf8.ValidString(d.Description) {
		return Errorf(CodeBadRequest, "description must be valid UTF-8 of at most %d bytes", MaxAgentDescBytes)
	}
	if !utf8.ValidString(d.Instructions) {
		return Errorf(CodeBadRequest, "instructions must be valid UTF-8")
	}
	if len(d.Instructions) > MaxSystemPromptBytes {
		return Errorf(CodeBadRequest, "instructions are %d bytes long; at most %d are allowed", len(d.Instructions), MaxSystemPromptBytes)
	}
	if strings.HasPrefix(d.Model, "agent/") {
		return Errorf(CodeBadRequest, "model %q names an agent; an agent's model is a provider's model id (GET /agentik/models)", d.Model)
	}
	switch d.Approval {
	case "", ApprovalAlways, ApprovalNever:
	default:
		return Errorf(CodeBadRequest, "approval must be \"always\", \"never\" or absent (the tool servers' policy), got %q", Shorten(d.Approval, 40))
	}
	switch d.Visibility {
	case VisibilityPrivate, VisibilityShared:
	case VisibilityGroup:
		if len(d.Groups) == 0 {
			return Errorf(CodeBadRequest, "visibility \"group\" needs groups: the ids of the groups to share it with (GET /agentik/groups)")
		}
	default:
		return Errorf(CodeBadRequest, "visibility must be \"private\", \"shared\" or \"group\", got %q", Shorten(d.Visibility, 40))
	}
	if len(d.Tools) > MaxAgentTools {
		return Errorf(CodeBadRequest, "tools has %d entries; at most %d are allowed", len(d.Tools), MaxAgentTools)
	}
	if len(d.Starters) > MaxAgentStarters {
		return Errorf(CodeBadRequest, "starters has %d entries; at most %d are allowed", len(d.Starters), MaxAgentStarters)
	}
	for i, s := range d.Starters {
		if strings.TrimSpace(s) == "" || len(s) > MaxStarterBytes || !utf8.ValidString(s) {
			return Errorf(CodeBadRequest, "starters[%d] must be non-empty valid UTF-8 of at most %d bytes", i, MaxStarterBytes)
		}
	}
	return d.Params.check()
}

// checkPattern checks the syntax of a tool pattern.
func checkPattern(p string) error {
	if p == "" {
		return Errorf(CodeBadRequest, "a tool pattern must not be empty")
	}
	if _, err := path.Match(p, ""); err != nil {
		return Errorf(CodeBadRequest, "tool pattern %q is malformed: %v", Shorten(p, 60), err)
	}
	return nil
}

// checkAgent checks a definition before it is stored: its fields, its model,
// each tool pattern against the tools there are, and its delegates (known,
// visible to its owner, no cycle, no chain deeper than MaxDelegationDepth).
func (a *Agents) checkAgent(ctx context.Context, d AgentDef) error {
	r := a.r
	if err := checkAgentFields(d); err != nil {
		return err
	}
	if err := r.checkAgentKnowledge(ctx, d); err != nil { // knowledge.go
		return err
	}
	if err := r.checkAgentGroups(ctx, d); err != nil {
		return err
	}
	if err := r.checkModel(d.Model); err != nil {
		return err
	}
	names, servers := a.toolNames(ctx)
	all, err := a.store.Agents(ctx)
	if err != nil {
		return fmt.Errorf("check agent: %w", err)
	}
	known := map[string]AgentDef{}
	for _, o := range all {
		if !o.Deleted {
			known[o.Slug] = o
		}
	}
	known[d.Slug] = d
	for i, p := range d.Tools {
		if slug, ok := strings.CutPrefix(p, DelegatePrefix); ok {
			o, ok := known[slug]
			if !ok || (o.Visibility != VisibilityShared && o.Owner != d.Owner) {
				return Errorf(CodeBadRequest, "tools[%d] delegates to %q, an agent that does not exist or is private to another user", i, Shorten(slug, 60))
			}
			if slug == d.Slug {
				return Errorf(CodeBadRequest, "tools[%d]: agent %q cannot delegate to itself", i, slug)
			}
			continue
		}
		p = strings.TrimPrefix(p, ExcludePrefix)
		if err := checkPattern(p); err != nil {
			return Errorf(CodeBadRequest, "tools[%d]: %s", i, err.Error())
		}
		if !patternMatches(p, slices.Concat(names, memoryTools, []string{ToolFileSearch}), servers) {
			return Errorf(CodeBadRequest, "tools[%d] %q matches no tool (GET /agentik/tools lists them)", i, Shorten(p, 60))
		}
	}
	if err := checkGraph(d, known); err != nil {
		return Errorf(CodeBadRequest, "tools: %s", err.Error())
	}
	return nil
}

// checkAgentGroups checks the groups an agent is shared with: each exists,
// and a member shares only with groups they are in (an admin with any).
func (r *Runner) checkAgentGroups(ctx context.Context, d AgentDef) error {
	if len(d.Groups) == 0 {
		return nil
	}
	v := r.viewer(ctx)
	for i, id := range d.Groups {
		if r.cfg.Groups == nil {
			return Errorf(CodeBadRequest, "groups[%d]: this server keeps no groups", i)
		}
		_, err := r.cfg.Groups.Group(ctx, id)
		if err == nil && !v.inGroups([]string{id}) {
			err = Errorf(CodeNotFound, "no such group")
		}
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeBadRequest, "groups[%d] %q names no group of yours (GET /agentik/groups lists them)", i, Shorten(id, 60))
		}
		if err != nil {
			return fmt.Errorf("check agent: %w", err)
		}
	}
	return nil
}

// patternMatches reports whether a tool pattern matches a tool there is,
// or names a configured tool server (whose tools may not be listed yet).
func patternMatches(p string, names, servers []string) bool {
	if p == "*" {
		return true
	}
	for _, n := range names {
		if ok, _ := path.Match(p, n); ok {
			return true
		}
	}
	if server, _, ok := strings.Cut(p, "__"); ok {
		return slices.Contains(servers, server)
	}
	return false
}

// toolNames lists the tool names the model may see now and the tool
// servers configured.
func (a *Agents) toolNames(ctx context.Context) (names, servers []string) {
	if a.r.cfg.Tools != nil {
		for _, s := range a.r.cfg.Tools.Specs(ctx) {
			names = append(names, s.Name)
		}
	}
	if a.cfg.Servers != nil {
		for _, s := range a.cfg.Servers.Servers() {
			servers = append(servers, s.Name)
		}
	}
	return names, servers
}

// delegates are the agents d lists as tools.
func delegates(d AgentDef) []string {
	var out []string
	for _, p := range d.Tools {
		if slug, ok := strings.CutPrefix(p, DelegatePrefix); ok {
			out = append(out, slug)
		}
	}
	return out
}

// checkGraph refuses a delegation cycle through d and a chain through d
// longer than MaxDelegationDepth, naming the path.
func checkGraph(d AgentDef, known map[string]AgentDef) error {
	// Down: the longest chain from d, and cycles.
	var down func(slug string, path []string) (int, error)
	down = func(slug string, path []string) (int, error) {
		if slices.Contains(path, slug) {
			return 0, fmt.Errorf("delegation cycle %s", strings.Join(append(path, slug), " → "))
		}
		path = append(path, slug)
		best := 0
		for _, c := range delegates(known[slug]) {
			if _, ok := known[c]; !ok {
				continue
			}
			n, err := down(c, path)
			if err != nil {
				return 0, err
			}
			best = max(best, n+1)
		}
		return best, nil
	}
	depthDown, err := down(d.Slug, nil)
	if err != nil {
		return err
	}
	// Up: the longest chain of agents that delegate to d.
	parents := map[string][]string{}
	slugs := make([]string, 0, len(known))
	for s := range known {
		slugs = append(slugs, s)
	}
	sort.Strings(slugs)
	for _, s := range slugs {
		for _, c := range delegates(known[s]) {
			parents[c] = append(parents[c], s)
		}
	}
	var up func(slug string, seen []string) int
	up = func(slug string, seen []string) int {
		best := 0
		for _, p := range parents[slug] {
			if !slices.Contains(seen, p) {
				best = max(best, up(p, append(seen, p))+1)
			}
		}
		return best
	}
	if n := up(d.Slug, []string{d.Slug}) + depthDown; n > MaxDelegationDepth {
		return fmt.Errorf("a delegation chain through %q would be %d agents deep; at most %d are allowed", d.Slug, n, MaxDelegationDepth)
	}
	return nil
}

// sameDefinition reports whether two versions define the same agent.
func sameDefinition(a, b AgentDef) bool {
	pa, pb := encodeParamsKey(a.Params), encodeParamsKey(b.Params)
	return a.Name == b.Name && a.Description == b.Description && a.Instructions == b.Instructions && a.Model == b.Model &&
		pa == pb && slices.Equal(a.Tools, b.Tools) && a.Approval == b.Approval && a.Visibility == b.Visibility && slices.Equal(a.Groups, b.Groups) &&
		a.Owner == b.Owner && slices.Equal(a.Starters, b.Starters) && a.ReadOnly == b.ReadOnly && a.A2A == b.A2A && !a.Deleted
}

func encodeParamsKey(p *Params) string {
	if p.empty() {
		return ""
	}
	f := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	n := "-"
	if p.MaxTokens != nil {
		n = fmt.Sprint(*p.MaxTokens)
	}
	return f(p.Temperature) + "/" + n + "/" + f(p.TopP)
}

// memAgentStore is the AgentStore of a runner without one.
type memAgentStore struct {
	mu   sync.Mutex
	defs map[string][]AgentDef // versions by slug, oldest first
}

func (m *memAgentStore) Agents(context.Context) ([]AgentDef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]AgentDef, 0, len(m.defs))
	for _, vs := range m.defs {
		out = append(out, vs[len(vs)-1])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

func (m *memAgentStore) Agent(_ context.Context, slug string) (AgentDef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.defs[slug]
	if len(vs) == 0 {
		return AgentDef{}, agentNotFound(slug)
	}
	return vs[len(vs)-1], nil
}

func (m *memAgentStore) AgentVersion(_ context.Context, slug string, version int) (AgentDef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.defs[slug]
	if version < 1 || version > len(vs) {
		return AgentDef{}, Errorf(CodeNotFound, "agent %q has no version %d", Shorten(slug, 60), version)
	}
	return vs[version-1], nil
}

func (m *memAgentStore) RenameAgent(_ context.Context, from string, d AgentDef) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.defs[from]
	if d.Version != len(vs)+1 || len(m.defs[d.Slug]) > 0 {
		return Errorf(CodeConflict, "agent %q changed meanwhile, or %q is taken", from, d.Slug)
	}
	moved := make([]AgentDef, 0, len(vs)+1)
	for _, v := range vs {
		v.Slug = d.Slug
		moved = append(moved, v)
	}
	delete(m.defs, from)
	m.defs[d.Slug] = append(moved, d)
	for slug, vs := range m.defs {
		if o, ok := RenameDelegate(vs[len(vs)-1], from, d.Slug, d.UpdatedAt); ok {
			m.defs[slug] = append(vs, o)
		}
	}
	return nil
}

// RenameDelegate is the next version of o delegating to to where it
// delegated to from, if o is not defined as code and did (for an
// AgentStore's RenameAgent).
func RenameDelegate(o AgentDef, from, to string, now time.Time) (AgentDef, bool) {
	if o.ReadOnly || !slices.Contains(o.Tools, DelegatePrefix+from) {
		return AgentDef{}, false
	}
	o.Tools = slices.Clone(o.Tools)
	for i, p := range o.Tools {
		if p == DelegatePrefix+from {
			o.Tools[i] = DelegatePrefix + to
		}
	}
	o.Version++
	o.UpdatedAt = now
	return o, true
}

func (m *memAgentStore) SaveAgent(_ context.Context, d AgentDef) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.defs == nil {
		m.defs = map[string][]AgentDef{}
	}
	if d.Version != len(m.defs[d.Slug])+1 {
		return Errorf(CodeConflict, "agent %q changed meanwhile: read it again", d.Slug)
	}
	m.defs[d.Slug] = append(m.defs[d.Slug], d)
	return nil
}
