package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/llm"
	"github.com/agentik/agentik/internal/secret"
	"github.com/agentik/agentik/internal/tool"
)

// site is the admin panel's backend (agent.SiteBackend): it checks a
// change, stores it in the database and applies it to the running server
// without a restart — the models through llm.Live (the next model call
// uses them), the MCP servers through tool.Manager.Put and Remove (the
// next turn is offered their tools), the system prompt and default budget
// through agent.Site's values (the next turn reads them). What the
// environment or a file configured (base, baseTools, envPrompt,
// envBudget) wins: it is shown with its source and cannot be changed
// here. On PostgreSQL every change notifies the other instances, which
// apply the stored settings again (store.OnSite).
type site struct {
	store     agent.SiteStore
	live      *llm.Live
	base      llm.ProvidersConfig // the environment's or the providers file's
	baseSrc   string              // agent.SourceEnv or agent.SourceFile
	popts     llm.ProvidersOptions
	tools     *tool.Manager
	baseTools map[string]bool // the servers of AGENTIK_MCP_CONFIG
	getenv    func(string) string
	envPrompt bool // AGENTIK_SYSTEM_PROMPT is set
	envBudget bool // AGENTIK_DEFAULT_BUDGET is set
	values    func(agent.SiteValues)
	log       *slog.Logger
	// box seals the providers' API keys in the database
	// (AGENTIK_SECRET_KEY); nil: a key cannot be stored here.
	box *secret.Box

	mu      sync.Mutex               // one change or apply at a time
	running map[string]siteMCPServer // the admin's MCP servers as applied
}

// The keys of the settings in the store (agent.SiteStore).
const (
	siteProviders     = "providers"
	siteDefaultModel  = "default_model"
	siteMCPServers    = "mcp_servers"
	siteSystemPrompt  = "system_prompt"
	siteDefaultBudget = "default_budget"
)

// siteProvider is a stored provider. In the database its key is only
// SealedKey (sealKeys); APIKey is the key opened, in memory (a row from
// before sealing may still hold it in clear, sealed at the next change).
type siteProvider struct {
	Name      string   `json:"name"`
	BaseURL   string   `json:"base_url"`
	APIKey    string   `json:"api_key,omitempty"`
	SealedKey []byte   `json:"api_key_sealed,omitempty"`
	Models    []string `json:"models,omitempty"`
	Enabled   bool     `json:"enabled"`
}

// siteMCPServer is a stored MCP server: its mcp.json entry.
type siteMCPServer struct {
	Name    string          `json:"name"`
	Entry   json.RawMessage `json:"entry"`
	Enabled bool            `json:"enabled"`
}

// siteSettings is every stored setting, decoded.
type siteSettings struct {
	providers    []siteProvider
	defaultModel string
	mcp          []siteMCPServer
	systemPrompt string
	budget       string
}

func (s *site) load(ctx context.Context) (siteSettings, error) {
	kv, err := s.store.SiteSettings(ctx)
	if err != nil {
		return siteSettings{}, err
	}
	var out siteSettings
	for key, v := range map[string]any{siteProviders: &out.providers, siteDefaultModel: &out.defaultModel, siteMCPServers: &out.mcp, siteSystemPrompt: &out.systemPrompt, siteDefaultBudget: &out.budget} {
		if raw, ok := kv[key]; ok {
			if err := json.Unmarshal([]byte(raw), v); err != nil {
				return siteSettings{}, fmt.Errorf("site settings: %s: %w", key, err)
			}
		}
	}
	for i, p := range out.providers {
		if len(p.SealedKey) == 0 {
			continue
		}
		if s.box == nil {
			s.log.Warn("provider_key_sealed", "provider", p.Name, "hint", "set AGENTIK_SECRET_KEY (the one it was sealed with) to use the key stored in the admin panel")
			continue
		}
		k, err := s.box.Open(p.SealedKey, keyAD(p.Name))
		if err != nil {
			s.log.Warn("provider_key_unopened", "provider", p.Name, "err", err)
			continue
		}
		out.providers[i].APIKey, out.providers[i].SealedKey = string(k), nil
	}
	return out, nil
}

// keyAD binds a provider's sealed key to its provider.
func keyAD(name string) []byte { return []byte("site_setting/providers/" + name) }

// sealKeys is ps as the database keeps them: each key sealed with the
// box, none in clear.
func (s *site) sealKeys(ps []siteProvider) ([]siteProvider, error) {
	out := slices.Clone(ps)
	for i, p := range out {
		if p.APIKey == "" {
			continue
		}
		if s.box == nil {
			return nil, agent.Errorf(agent.CodeBadRequest, "provider %q has an API key, which this server cannot keep: set AGENTIK_SECRET_KEY (the key is sealed with it in the database), or configure the provider in AGENTIK_PROVIDERS", p.Name)
		}
		out[i].SealedKey, out[i].APIKey = s.box.Seal([]byte(p.APIKey), keyAD(p.Name)), ""
	}
	return out, nil
}

func (s *site) put(ctx context.Context, key string, v any) error {
	if ps, ok := v.([]siteProvider); ok {
		var err error
		if v, err = s.sealKeys(ps); err != nil {
			return err
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.store.PutSiteSetting(ctx, key, string(b))
}

// Apply reads the stored settings and applies them: at start, and when
// another instance changed them.
func (s *site) Apply(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(ctx)
	if err != nil {
		return err
	}
	return s.apply(st)
}

// apply makes the running server what st says.
func (s *site) apply(st siteSettings) error {
	ps, err := s.providers(st)
	if err != nil {
		return err
	}
	if ps != nil || len(s.base.Providers) == 0 {
		s.live.Set(ps)
	}
	var errs []error
	want := map[string]siteMCPServer{}
	for _, m := range st.mcp {
		want[m.Name] = m
	}
	for name := range s.running {
		if _, ok := want[name]; !ok {
			if err := s.tools.Remove(name); err != nil && agent.ErrorCode(err) != agent.CodeNotFound {
				errs = append(errs, err)
			}
			delete(s.running, name)
		}
	}
	for _, name := range sortedNames(want) {
		m := want[name]
		if r, ok := s.running[name]; ok && r.Enabled == m.Enabled && bytes.Equal(r.Entry, m.Entry) {
			continue
		}
		sc, err := s.entry(m)
		if err == nil {
			err = s.tools.Put(sc)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.running[name] = m
	}
	v := agent.SiteValues{}
	if !s.envPrompt {
		v.SystemPrompt = st.systemPrompt
	}
	if !s.envBudget && st.budget != "" {
		if b, err := agent.ParseBudget(st.budget); err == nil {
			v.DefaultBudget = &b
		}
	}
	s.values(v)
	if len(errs) > 0 {
		return fmt.Errorf("apply site settings: %w", joinErrs(errs))
	}
	return nil
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

func sortedNames(m map[string]siteMCPServer) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// entry is the tool config of a stored MCP server.
func (s *site) entry(m siteMCPServer) (tool.ServerConfig, error) {
	sc, err := tool.ParseEntry(m.Name, m.Entry, s.getenv)
	if err != nil {
		return tool.ServerConfig{}, err
	}
	sc.Disabled = sc.Disabled || !m.Enabled
	return sc, nil
}

// providers are the models of the base and st's enabled providers, with
// st's default model; nil when there are none, or when st changes
// nothing of the base (whose Providers stay).
func (s *site) providers(st siteSettings) (*llm.Providers, error) {
	cfg := llm.ProvidersConfig{Providers: slices.Clone(s.base.Providers), Default: s.base.Default}
	added := false
	for _, p := range st.providers {
		if !p.Enabled {
			continue
		}
		pc := llm.ProviderConfig{Name: p.Name, BaseURL: strings.TrimRight(p.BaseURL, "/"), APIKey: p.APIKey, Vision: true}
		if len(p.Models) == 0 {
			pc.Auto = true
		}
		for _, m := range p.Models {
			pc.Models = append(pc.Models, llm.ModelConfig{Name: m, Vision: true})
		}
		cfg.Providers = append(cfg.Providers, pc)
		added = true
	}
	if len(cfg.Providers) == 0 {
		return nil, nil
	}
	if st.defaultModel != "" && knownModel(cfg, st.defaultModel) {
		cfg.Default = st.defaultModel
	}
	if cfg.Default == "" {
		first := cfg.Providers[0]
		if first.Auto {
			return nil, agent.Errorf(agent.CodeBadRequest, "provider %q lists its models only once it answers: choose the default model as %s/<model>", first.Name, first.Name)
		}
		cfg.Default = first.Name + "/" + first.Models[0].Name
	}
	if !added && cfg.Default == s.base.Default {
		return s.live.Current(), nil // the base's Providers, checks and learnt windows kept
	}
	ps, err := llm.NewProviders(cfg, s.popts)
	if err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "%s", err.Error())
	}
	return ps, nil
}

// knownModel reports whether id (<provider>/<model>) is a model of cfg.
func knownModel(cfg llm.ProvidersConfig, id string) bool {
	prov, name, ok := strings.Cut(id, "/")
	if !ok || name == "" {
		return false
	}
	for _, p := range cfg.Providers {
		if p.Name != prov {
			continue
		}
		if p.Auto {
			return true
		}
		for _, m := range p.Models {
			if m.Name == name {
				return true
			}
		}
	}
	return false
}

// providerName is what a provider may be called: it starts model ids.
var providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// checkProvider is the bad_request of a provider that cannot work.
func checkProvider(p agent.SiteProvider) error {
	if !providerName.MatchString(p.Name) {
		return agent.Errorf(agent.CodeBadRequest, "provider.name must be lowercase letters, digits, '.', '_' or '-' (it starts the model ids, as in openai/gpt-4o), got %q", agent.Shorten(p.Name, 64))
	}
	u, err := url.Parse(strings.TrimSpace(p.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return agent.Errorf(agent.CodeBadRequest, "provider.base_url must be an http(s) URL of an OpenAI-compatible API, such as http://127.0.0.1:11434/v1, got %q", agent.Shorten(p.BaseURL, 120))
	}
	for _, m := range p.Models {
		if strings.TrimSpace(m) == "" || m != strings.TrimSpace(m) {
			return agent.Errorf(agent.CodeBadRequest, "provider.models must be model names without spaces around them, got %q", agent.Shorten(m, 64))
		}
	}
	return nil
}

// View implements agent.SiteBackend.
func (s *site) View(ctx context.Context) (agent.SiteView, error) {
	st, err := s.load(ctx)
	if err != nil {
		return agent.SiteView{}, err
	}
	v := agent.SiteView{Providers: []agent.SiteProvider{}, MCPServers: []agent.SiteMCPServer{}, Models: s.live.Models()}
	available := map[string]bool{}
	for _, m := range v.Models {
		available[m.Provider] = available[m.Provider] || m.Available
	}
	for _, p := range s.base.Providers {
		models := []string{}
		for _, m := range p.Models {
			models = append(models, m.Name)
		}
		v.Providers = append(v.Providers, agent.SiteProvider{Name: p.Name, BaseURL: redactedURL(p.BaseURL), HasKey: p.APIKey != "", Models: models, Enabled: true, Source: s.baseSrc, Available: available[p.Name]})
	}
	for _, p := range st.providers {
		v.Providers = append(v.Providers, agent.SiteProvider{Name: p.Name, BaseURL: redactedURL(p.BaseURL), HasKey: p.APIKey != "", Models: append([]string{}, p.Models...), Enabled: p.Enabled, Source: agent.SourceAdmin, Available: p.Enabled && available[p.Name]})
	}
	v.DefaultModel = s.live.Default()
	switch {
	case st.defaultModel != "" && v.DefaultModel == st.defaultModel:
		v.DefaultModelSource = agent.SourceAdmin
	case v.DefaultModel != "" && v.DefaultModel == s.base.Default:
		v.DefaultModelSource = s.baseSrc
	case v.DefaultModel != "":
		v.DefaultModelSource = agent.SourceAdmin
	}
	admin := map[string]siteMCPServer{}
	for _, m := range st.mcp {
		admin[m.Name] = m
	}
	seen := map[string]bool{}
	for _, ts := range s.tools.Servers() {
		src, enabled := agent.SourceFile, ts.State != agent.ToolServerDisabled
		if m, ok := admin[ts.Name]; ok && !s.baseTools[ts.Name] {
			src, enabled = agent.SourceAdmin, m.Enabled
		}
		seen[ts.Name] = true
		v.MCPServers = append(v.MCPServers, agent.SiteMCPServer{Name: ts.Name, Enabled: enabled, Source: src, State: ts.State, Error: ts.Error, Tools: append([]string{}, ts.Tools...)})
	}
	for _, m := range st.mcp { // stored but not running (its entry failed to start)
		if !seen[m.Name] {
			v.MCPServers = append(v.MCPServers, agent.SiteMCPServer{Name: m.Name, Enabled: m.Enabled, Source: agent.SourceAdmin, State: agent.ToolServerFailed, Tools: []string{}})
		}
	}
	v.SystemPrompt, v.SystemPromptSource = st.systemPrompt, agent.SourceAdmin
	if s.envPrompt {
		v.SystemPromptSource = agent.SourceEnv
	}
	v.DefaultBudget, v.DefaultBudgetSource = st.budget, agent.SourceAdmin
	if s.envBudget {
		v.DefaultBudgetSource = agent.SourceEnv
	}
	return v, nil
}

// redactedURL is a base URL as the panel shows it: no password, no query.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// Change implements agent.SiteBackend: a change is checked against the
// settings it makes (the providers and MCP entries it would run, built
// before anything is stored), stored, then applied.
func (s *site) Change(ctx context.Context, c agent.SiteChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(ctx)
	if err != nil {
		return err
	}
	key, val, err := s.changed(&st, c)
	if err != nil {
		return err
	}
	if _, err := s.providers(st); err != nil { // the models it would run
		return err
	}
	for _, m := range st.mcp {
		if _, err := s.entry(m); err != nil {
			return agent.Errorf(agent.CodeBadRequest, "%s", err.Error())
		}
	}
	if key != "" {
		if err := s.put(ctx, key, val); err != nil {
			return err
		}
	}
	if c.Action == agent.SiteRestartMCP {
		sc, ok := s.tools.Config(c.Name)
		if !ok {
			return agent.Errorf(agent.CodeNotFound, "no MCP server %q", agent.Shorten(c.Name, 80))
		}
		return s.tools.Put(sc)
	}
	if err := s.apply(st); err != nil {
		s.log.Warn("site_apply_failed", "err", err)
	}
	return nil
}

// changed makes c in st and returns the key it changed and its new value;
// a change that cannot be made is an error and st is then not stored.
func (s *site) changed(st *siteSettings, c agent.SiteChange) (string, any, error) {
	needValue := func() (string, error) {
		if c.Value == nil {
			return "", agent.Errorf(agent.CodeBadRequest, "value is required")
		}
		return *c.Value, nil
	}
	switch c.Action {
	case agent.SitePutProvider:
		if c.Provider == nil {
			return "", nil, agent.Errorf(agent.CodeBadRequest, "provider is required")
		}
		p := *c.Provider
		if err := checkProvider(p); err != nil {
			return "", nil, err
		}
		for _, b := range s.base.Providers {
			if b.Name == p.Name {
				return "", nil, agent.Errorf(agent.CodeConflict, "provider %q comes from the %s and cannot be changed here", p.Name, sourceWords(s.baseSrc))
			}
		}
		sp := siteProvider{Name: p.Name, BaseURL: strings.TrimRight(strings.TrimSpace(p.BaseURL), "/"), APIKey: p.APIKey, Models: p.Models, Enabled: p.Enabled}
		i := slices.IndexFunc(st.providers, func(o siteProvider) bool { return o.Name == p.Name })
		if i >= 0 {
			if sp.APIKey == "" { // the key is write-only: keep the stored one
				sp.APIKey = st.providers[i].APIKey
			}
			st.providers[i] = sp
		} else {
			st.providers = append(st.providers, sp)
		}
		return siteProviders, st.providers, nil
	case agent.SiteDeleteProvider:
		i := slices.IndexFunc(st.providers, func(o siteProvider) bool { return o.Name == c.Name })
		if i < 0 {
			return "", nil, agent.Errorf(agent.CodeNotFound, "no provider %q added in the admin panel", agent.Shorten(c.Name, 64))
		}
		st.providers = slices.Delete(st.providers, i, i+1)
		return siteProviders, st.providers, nil
	case agent.SiteDefaultModel:
		v, err := needValue()
		if err != nil {
			return "", nil, err
		}
		if v != "" {
			cfg := llm.ProvidersConfig{Providers: slices.Clone(s.base.Providers)}
			for _, p := range st.providers {
				if p.Enabled {
					pc := llm.ProviderConfig{Name: p.Name, Auto: len(p.Models) == 0}
					for _, m := range p.Models {
						pc.Models = append(pc.Models, llm.ModelConfig{Name: m})
					}
					cfg.Providers = append(cfg.Providers, pc)
				}
			}
			if !knownModel(cfg, v) {
				return "", nil, agent.Errorf(agent.CodeBadRequest, "value must be a model of an enabled provider, as <provider>/<model> (GET /agentik/admin/settings lists them), got %q", agent.Shorten(v, 120))
			}
		}
		st.defaultModel = v
		return siteDefaultModel, v, nil
	case agent.SitePutMCPServer:
		m, err := s.mcpEntry(c)
		if err != nil {
			return "", nil, err
		}
		i := slices.IndexFunc(st.mcp, func(o siteMCPServer) bool { return o.Name == m.Name })
		if i >= 0 {
			if len(c.Entry) == 0 {
				m.Entry = st.mcp[i].Entry // only enabled changes
			}
			st.mcp[i] = m
		} else {
			if len(m.Entry) == 0 {
				return "", nil, agent.Errorf(agent.CodeBadRequest, "entry is required: the server's object from an mcp.json, such as {\"url\": \"https://…/mcp\"}")
			}
			st.mcp = append(st.mcp, m)
		}
		return siteMCPServers, st.mcp, nil
	case agent.SiteDeleteMCP:
		i := slices.IndexFunc(st.mcp, func(o siteMCPServer) bool { return o.Name == c.Name })
		if i < 0 {
			return "", nil, agent.Errorf(agent.CodeNotFound, "no MCP server %q added in the admin panel", agent.Shorten(c.Name, 80))
		}
		st.mcp = slices.Delete(st.mcp, i, i+1)
		return siteMCPServers, st.mcp, nil
	case agent.SiteRestartMCP:
		return "", nil, nil
	case agent.SiteSystemPrompt:
		if s.envPrompt {
			return "", nil, agent.Errorf(agent.CodeConflict, "the system prompt comes from AGENTIK_SYSTEM_PROMPT and cannot be changed here")
		}
		v, err := needValue()
		if err != nil {
			return "", nil, err
		}
		st.systemPrompt = v
		return siteSystemPrompt, v, nil
	case agent.SiteDefaultBudget:
		if s.envBudget {
			return "", nil, agent.Errorf(agent.CodeConflict, "the default budget comes from AGENTIK_DEFAULT_BUDGET and cannot be changed here")
		}
		v, err := needValue()
		if err != nil {
			return "", nil, err
		}
		if _, err := agent.ParseBudget(v); err != nil {
			return "", nil, err
		}
		st.budget = strings.TrimSpace(v)
		return siteDefaultBudget, st.budget, nil
	}
	return "", nil, agent.Errorf(agent.CodeBadRequest, "unknown change %q", agent.Shorten(c.Action, 40))
}

// mcpEntry is put_mcp_server's server: its entry may be pasted as the
// object under the name, or as a whole mcp.json with one server.
func (s *site) mcpEntry(c agent.SiteChange) (siteMCPServer, error) {
	name, entry := strings.TrimSpace(c.Name), bytes.TrimSpace(c.Entry)
	if len(entry) > 0 {
		var top map[string]json.RawMessage
		if json.Unmarshal(entry, &top) == nil {
			for _, k := range []string{"mcpServers", "servers"} {
				var inner map[string]json.RawMessage
				if raw, ok := top[k]; ok && json.Unmarshal(raw, &inner) == nil && len(inner) == 1 {
					for n, e := range inner {
						if name == "" {
							name = n
						}
						entry = e
					}
				}
			}
		}
	}
	if !providerName.MatchString(name) {
		return siteMCPServer{}, agent.Errorf(agent.CodeBadRequest, "name must be lowercase letters, digits, '.', '_' or '-' (it starts the tools' names), got %q", agent.Shorten(name, 64))
	}
	if s.baseTools[name] {
		return siteMCPServer{}, agent.Errorf(agent.CodeConflict, "MCP server %q comes from AGENTIK_MCP_CONFIG and cannot be changed here", name)
	}
	m := siteMCPServer{Name: name, Entry: json.RawMessage(entry), Enabled: c.Enabled == nil || *c.Enabled}
	if len(entry) > 0 {
		if _, err := tool.ParseEntry(name, entry, s.getenv); err != nil {
			return siteMCPServer{}, agent.Errorf(agent.CodeBadRequest, "entry: %s", err.Error())
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, entry); err == nil {
			m.Entry = compact.Bytes()
		}
	}
	return m, nil
}

func sourceWords(src string) string {
	if src == agent.SourceFile {
		return "providers file (AGENTIK_PROVIDERS)"
	}
	return "environment (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL)"
}

// Test implements agent.SiteBackend: the provider's models, its key the
// one given or, for a provider added before, the stored one.
func (s *site) Test(ctx context.Context, p agent.SiteProvider) ([]string, error) {
	if err := checkProvider(p); err != nil {
		return nil, err
	}
	if p.APIKey == "" {
		if st, err := s.load(ctx); err == nil {
			for _, o := range st.providers {
				if o.Name == p.Name {
					p.APIKey = o.APIKey
				}
			}
		}
	}
	names, err := llm.ListModels(ctx, p.BaseURL, p.APIKey)
	if err != nil {
		return nil, agent.Errorf(agent.CodeUnavailable, "%s", err.Error())
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}

var _ agent.SiteBackend = (*site)(nil)
