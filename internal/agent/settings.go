package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Params tune the model's sampling for one conversation; a nil field
// leaves the model's own default.
type Params struct {
	Temperature *float64 `json:"temperature,omitempty"` // 0–2
	MaxTokens   *int     `json:"max_tokens,omitempty"`  // ≥ 1
	TopP        *float64 `json:"top_p,omitempty"`       // 0–1
	// ReasoningEffort asks a reasoning model how hard to think (one of
	// ReasoningEfforts); ParallelToolCalls false asks for one tool call
	// per round. Both come from protocol requests (the Responses API).
	ReasoningEffort   *string `json:"reasoning_effort,omitempty"`
	ParallelToolCalls *bool   `json:"parallel_tool_calls,omitempty"`
}

// ReasoningEfforts are the values of Params.ReasoningEffort.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// check says which value is out of range.
func (p *Params) check() error {
	if p == nil {
		return nil
	}
	if t := p.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		return Errorf(CodeBadRequest, "params.temperature must be between 0 and 2, got %g", *t)
	}
	if n := p.MaxTokens; n != nil && *n < 1 {
		return Errorf(CodeBadRequest, "params.max_tokens must be 1 or more, got %d", *n)
	}
	if t := p.TopP; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 1) {
		return Errorf(CodeBadRequest, "params.top_p must be between 0 and 1, got %g", *t)
	}
	if e := p.ReasoningEffort; e != nil && !slices.Contains(ReasoningEfforts, *e) {
		return Errorf(CodeBadRequest, "params.reasoning_effort must be one of %s, got %q", strings.Join(ReasoningEfforts, ", "), Shorten(*e, 40))
	}
	return nil
}

// empty reports whether p sets nothing.
func (p *Params) empty() bool {
	return p == nil || (p.Temperature == nil && p.MaxTokens == nil && p.TopP == nil && p.ReasoningEffort == nil && p.ParallelToolCalls == nil)
}

// MaxSystemPromptBytes caps a conversation's system prompt.
const MaxSystemPromptBytes = 64 << 10

// ModelInfo is one model a conversation may use: what GET /agentik/models
// lists.
type ModelInfo struct {
	ID            string `json:"id"` // <provider>/<name>
	Provider      string `json:"provider"`
	Name          string `json:"name"`           // what the provider calls it
	ContextWindow int    `json:"context_window"` // tokens; 0 when unknown
	Vision        bool   `json:"vision"`         // accepts image input
	Available     bool   `json:"available"`      // its provider answered its last check
}

// Catalog is the set of models the runner may call: the model adapter's
// providers (llm.Providers) implement it beside Model, which routes each
// ChatRequest by its Model id.
type Catalog interface {
	// Models lists every configured model, available or not.
	Models() []ModelInfo
	// Default is the id of the model of conversations that name none.
	Default() string
}

// Settings is a change to a conversation's settings: nil fields stay as
// they are. An empty Model means the default model, an empty SystemPrompt
// the server's, empty Params the model's defaults.
type Settings struct {
	Title        *string
	Model        *string
	SystemPrompt *string
	Params       *Params
	// Agent is the slug of the conversation's agent; a Model of
	// "agent/<slug>" means the same (agentdef.go).
	Agent *string
	// Pinned and Archived file the conversation in lists; changing only
	// them leaves its UpdatedAt (and so its place by date) as it was.
	Pinned   *bool
	Archived *bool
	// Project moves the conversation into a project ("" out of it); only
	// its owner does (project.go). Like filing, it leaves UpdatedAt.
	Project *string
	// Tools are the tool servers and tools the conversation's turns are
	// offered (Conversation.Tools); ["*"] offers all again.
	Tools *[]string
}

// Filing reports whether s pins or archives and changes nothing else.
func (s Settings) Filing() bool {
	return (s.Pinned != nil || s.Archived != nil || s.Project != nil) && s.Title == nil && s.Model == nil && s.SystemPrompt == nil && s.Params == nil && s.Agent == nil && s.Tools == nil
}

// ErrUserTitled fails the append of a title the model wrote when a user
// has named the conversation meanwhile: a user's title is never
// overwritten.
var ErrUserTitled = errors.New("the conversation's title was given by a user")

// Models lists the models conversations may use and the default's id.
func (r *Runner) Models() ([]ModelInfo, string) {
	if r.cfg.Catalog == nil {
		return []ModelInfo{}, ""
	}
	return r.cfg.Catalog.Models(), r.cfg.Catalog.Default()
}

// DefaultModelName names the model of conversations that name none, as
// it is now: Config.ModelName (the name the operator configured) until
// the catalog's default changes (the admin panel's default model), then
// that model's id. Answers are marked with it, and the UI's model label
// shows it.
func (r *Runner) DefaultModelName() string {
	if r.cfg.Catalog != nil {
		if d := r.cfg.Catalog.Default(); d != "" && (d != r.startDefault || r.cfg.ModelName == "") {
			return d
		}
	}
	return r.cfg.ModelName
}

// ModelNameOf names the model conversation c's next turn runs on: its
// own, its agent's, else the default (DefaultModelName).
func (r *Runner) ModelNameOf(ctx context.Context, c Conversation) string {
	if c.Model != "" {
		return c.Model
	}
	if d, err := r.agentOf(ctx, c.Agent); err == nil && d.Model != "" {
		return d.Model
	}
	return r.DefaultModelName()
}

// ModelOf is the model conversation c runs on (the default when it names
// none); ok is false when no catalog knows it. The context window of a
// conversation follows it.
func (r *Runner) ModelOf(c Conversation) (ModelInfo, bool) {
	if r.cfg.Catalog == nil {
		return ModelInfo{}, false
	}
	id := c.Model
	if id == "" {
		id = r.cfg.Catalog.Default()
	}
	for _, m := range r.cfg.Catalog.Models() {
		if m.ID == id {
			return m, true
		}
	}
	return ModelInfo{}, false
}

// checkModel refuses a model id no provider offers, naming those it could be.
func (r *Runner) checkModel(id string) error {
	if id == "" {
		return nil
	}
	if r.cfg.Catalog == nil {
		return Errorf(CodeBadRequest, "model %q is not available: this server has no providers configured (AGENTIK_PROVIDERS)", id)
	}
	ms := r.cfg.Catalog.Models()
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		if m.ID == id {
			return nil
		}
		ids = append(ids, m.ID)
	}
	return Errorf(CodeBadRequest, "model %q is not configured; the models are: %s", id, strings.Join(ids, ", "))
}

// checkSettings validates s before anything is written.
func (r *Runner) checkSettings(s *Settings) error {
	if s.Title != nil {
		t, err := cleanTitle(*s.Title, false)
		if err != nil {
			return err
		}
		s.Title = &t
	}
	if s.Model != nil {
		m := strings.TrimSpace(*s.Model)
		if err := r.checkModel(m); err != nil {
			return err
		}
		s.Model = &m
	}
	if p := s.SystemPrompt; p != nil {
		if !utf8.ValidString(*p) {
			return Errorf(CodeBadRequest, "system_prompt must be valid UTF-8")
		}
		if len(*p) > MaxSystemPromptBytes {
			return Errorf(CodeBadRequest, "system_prompt is %d bytes long; at most %d are allowed", len(*p), MaxSystemPromptBytes)
		}
	}
	if err := checkChatTools(s.Tools); err != nil {
		return err
	}
	return s.Params.check()
}

// AllTools is the tool choice that offers every tool the agent allows.
const AllTools = "*"

// checkChatTools refuses a tool choice that is too long or names
// something no tool could be called: each entry is a tool server's name,
// a tool's name as the model sees it (server__tool), or "*" alone.
func checkChatTools(tools *[]string) error {
	if tools == nil {
		return nil
	}
	if len(*tools) > MaxAgentTools {
		return Errorf(CodeBadRequest, "tools has %d entries; at most %d are allowed", len(*tools), MaxAgentTools)
	}
	for i, n := range *tools {
		if n == AllTools && len(*tools) == 1 {
			continue
		}
		if n == "" || len(n) > 128 || strings.ContainsAny(n, "*?[]\\ ") || !utf8.ValidString(n) {
			return Errorf(CodeBadRequest, "tools[%d] is %q: name a tool server (weather) or a tool (weather__forecast), or send [\"*\"] alone for every tool", i, Shorten(n, 60))
		}
	}
	return nil
}

// ChatTools is a tool choice as a conversation keeps it: nil for every
// tool (["*"]), else a copy.
func ChatTools(tools []string) *[]string {
	if len(tools) == 1 && tools[0] == AllTools {
		return nil
	}
	out := slices.Clone(tools)
	if out == nil {
		out = []string{}
	}
	return &out
}

// offersTool reports whether conversation c's tool choice takes the
// server tool name: every tool without a choice, else one it names, or
// one of a server it names.
func offersTool(c Conversation, name string) bool {
	if c.Tools == nil {
		return true
	}
	server, _, _ := strings.Cut(name, "__")
	return slices.Contains(*c.Tools, name) || slices.Contains(*c.Tools, server)
}

// apply sets what s changes on c.
func (s Settings) apply(c *Conversation) {
	if s.Title != nil {
		c.Title, c.UserTitled = *s.Title, true
	}
	if s.Model != nil {
		c.Model = *s.Model
	}
	if s.SystemPrompt != nil {
		c.SystemPrompt = *s.SystemPrompt
	}
	if s.Params != nil {
		c.Params = s.Params
		if s.Params.empty() {
			c.Params = nil
		}
	}
	if s.Agent != nil {
		c.Agent = *s.Agent
	}
	if s.Pinned != nil {
		c.Pinned = *s.Pinned
	}
	if s.Archived != nil {
		c.Archived = *s.Archived
	}
	if s.Project != nil {
		c.Project = *s.Project
	}
	if s.Tools != nil {
		c.Tools = ChatTools(*s.Tools)
	}
}

// Update changes a conversation's title, model, system prompt or params:
// an updated event with the changed fields (and renamed, for clients that
// know only that, when the title changed). The next turn uses them. Bad
// values change nothing.
func (cs *Conversations) Update(ctx context.Context, id string, s Settings) (Conversation, error) {
	r := cs.r
	if err := r.access(ctx, id); err != nil {
		return Conversation{}, err
	}
	if s.Project != nil {
		if err := r.ownAccess(ctx, id); err != nil {
			return Conversation{}, err
		}
		if *s.Project != "" {
			if r.IsTemp(id) {
				return Conversation{}, Errorf(CodeBadRequest, "conversation %q is temporary: it cannot be in a project", Shorten(id, 40))
			}
			if _, err := r.checkProject(ctx, *s.Project); err != nil {
				return Conversation{}, err
			}
		}
	}
	if err := r.checkAgentSetting(ctx, &s); err != nil {
		return Conversation{}, err
	}
	if err := r.checkSettings(&s); err != nil {
		return Conversation{}, err
	}
	st := r.storeOf(id)
	c, err := st.Conversation(ctx, id)
	if err != nil {
		return Conversation{}, err
	}
	if s.Title == nil && s.Model == nil && s.SystemPrompt == nil && s.Params == nil && s.Agent == nil && s.Pinned == nil && s.Archived == nil && s.Project == nil && s.Tools == nil {
		return c, nil
	}
	if c.Temp && (s.Pinned != nil || s.Archived != nil) {
		return Conversation{}, Errorf(CodeBadRequest, "conversation %q is temporary: it cannot be pinned or archived; it is gone when the server restarts", Shorten(id, 40))
	}
	ev := AgentEvent{Type: AgentUpdated, ConversationID: id, Model: s.Model, SystemPrompt: s.SystemPrompt, Params: s.Params, Pinned: s.Pinned, Archived: s.Archived, Project: s.Project, Tools: s.Tools}
	if s.Agent != nil {
		ev.Agent = *s.Agent
	}
	var recs []*Record
	if s.Title != nil {
		ev.Title = *s.Title
		recs = append(recs, &Record{Event: r.agentEvent(AgentEvent{Type: AgentRenamed, ConversationID: id, Title: *s.Title})})
	}
	if s.Params != nil && s.Params.empty() {
		ev.Params = &Params{}
	}
	recs = append(recs, &Record{Event: r.agentEvent(ev)})
	if err := st.Append(ctx, recs...); err != nil {
		return Conversation{}, fmt.Errorf("update conversation: %w", err)
	}
	return st.Conversation(ctx, id) // a move reaches the index with its event (ProjectIndex.Committed)
}

// settings is the change an updated event carries.
func (a *AgentEvent) settings() Settings {
	s := Settings{Model: a.Model, SystemPrompt: a.SystemPrompt, Params: a.Params, Pinned: a.Pinned, Archived: a.Archived, Project: a.Project, Tools: a.Tools}
	if a.Agent != "" {
		s.Agent = &a.Agent
	}
	if a.Title != "" {
		s.Title = &a.Title
	}
	return s
}

// Settings is the change an updated event carries, for stores to apply.
func (a *AgentEvent) Settings() Settings { return a.settings() }

// Apply sets what s changes on c: what a store does with an updated event.
func (s Settings) Apply(c *Conversation) { s.apply(c) }

// checkVision refuses image input to a model that does not take images.
func (r *Runner) checkVision(c Conversation, content []Content) error {
	if !hasImage(content) {
		return nil
	}
	m, ok := r.ModelOf(c)
	if !ok || m.Vision {
		return nil
	}
	return Errorf(CodeBadRequest, "model %s does not accept images (no vision); send text only, or switch the conversation to a model with vision", m.ID)
}

func hasImage(content []Content) bool {
	for _, c := range content {
		if c.Type == ContentImage {
			return true
		}
	}
	return false
}

// chatRequest is what a turn of conversation c asks the model: the
// conversation's model and params, and its system prompt in place of the
// one working memory starts with.
func chatRequest(c Conversation, mem []ModelMessage, tools []ToolSpec) ChatRequest {
	if c.SystemPrompt != "" && len(mem) > 0 && mem[0].Role == RoleSystem {
		mem = append([]ModelMessage{{Role: RoleSystem, Content: []Content{Text(c.SystemPrompt)}}}, mem[1:]...)
	}
	return ChatRequest{Model: c.Model, Params: c.Params, Messages: mem, Tools: tools}
}
