package agent

import (
	"context"
	"encoding/json"
	"sync/atomic"
)

// The admin panel's settings (DESIGN.md §12, issue 51): model providers,
// MCP servers, the default model, the default system prompt and the
// default budget, changed live by an admin and kept in the database.
// What the environment or a file sets wins and is shown read-only
// (Source). Site checks that the caller is an admin (a member gets
// forbidden), has the backend (app/site.go) check, store and apply the
// change, and records it in the audit log.

// Where a setting comes from.
const (
	SourceAdmin = "admin" // the admin panel (the database)
	SourceEnv   = "env"   // an environment variable or flag
	SourceFile  = "file"  // a file an environment variable names
)

// SiteStore keeps the admin panel's settings: JSON values by key.
type SiteStore interface {
	SiteSettings(ctx context.Context) (map[string]string, error)
	// PutSiteSetting sets key to value, or deletes it when value is "".
	PutSiteSetting(ctx context.Context, key, value string) error
}

// SiteProvider is an OpenAI-compatible model provider.
type SiteProvider struct {
	Name    string `json:"name"`
	BaseURL string `json:"base_url"`
	// APIKey is written, never read back: HasKey says there is one.
	APIKey string `json:"api_key,omitempty"`
	HasKey bool   `json:"has_key"`
	// Models are the models it serves; none: whatever its GET /models lists.
	Models    []string `json:"models"`
	Enabled   bool     `json:"enabled"`
	Source    string   `json:"source"`
	Available bool     `json:"available"`
}

// SiteMCPServer is an MCP server, its state and its tools.
type SiteMCPServer struct {
	Name    string   `json:"name"`
	Enabled bool     `json:"enabled"`
	Source  string   `json:"source"`
	State   string   `json:"state"`
	Error   string   `json:"error,omitempty"`
	Tools   []string `json:"tools"`
}

// SiteView is every setting of the admin panel and where each comes from.
type SiteView struct {
	Providers           []SiteProvider  `json:"providers"`
	Models              []ModelInfo     `json:"models"`
	DefaultModel        string          `json:"default_model"`
	DefaultModelSource  string          `json:"default_model_source"`
	MCPServers          []SiteMCPServer `json:"mcp_servers"`
	SystemPrompt        string          `json:"system_prompt"`
	SystemPromptSource  string          `json:"system_prompt_source"`
	DefaultBudget       string          `json:"default_budget"`
	DefaultBudgetSource string          `json:"default_budget_source"`
}

// Site changes.
const (
	SitePutProvider    = "put_provider"
	SiteDeleteProvider = "delete_provider"
	SiteDefaultModel   = "set_default_model"
	SitePutMCPServer   = "put_mcp_server"
	SiteDeleteMCP      = "delete_mcp_server"
	SiteRestartMCP     = "restart_mcp_server"
	SiteSystemPrompt   = "set_system_prompt"
	SiteDefaultBudget  = "set_default_budget"
)

// SiteChange is one change an admin makes; Action says which, and which
// fields it reads.
type SiteChange struct {
	Action   string        `json:"-"`
	Provider *SiteProvider `json:"provider,omitempty"`
	// Name names the provider or MCP server of a delete or restart, and
	// of a put_mcp_server.
	Name string `json:"name,omitempty"`
	// Entry is put_mcp_server's mcp.json entry (the object under its name).
	Entry   json.RawMessage `json:"entry,omitempty"`
	Enabled *bool           `json:"enabled,omitempty"`
	// Value is the default model id, the system prompt or the budget
	// ("" clears the admin's value).
	Value *string `json:"value,omitempty"`
}

// SiteBackend checks, stores and applies the settings (app/site.go).
type SiteBackend interface {
	View(ctx context.Context) (SiteView, error)
	// Change checks c (a bad one is bad_request and changes nothing),
	// stores it and applies it to the running server.
	Change(ctx context.Context, c SiteChange) error
	// Test asks p for its models without storing anything.
	Test(ctx context.Context, p SiteProvider) ([]string, error)
}

// Site is the admin panel's service.
type Site struct {
	backend SiteBackend
	audit   *Audit
	values  atomic.Pointer[SiteValues]
}

// SiteValues are the settings the runner reads on every turn.
type SiteValues struct {
	SystemPrompt  string // "": the configured one
	DefaultBudget *Budget
}

// NewSite makes the admin panel's service over backend; audit records
// each change (nil: none).
func NewSite(backend SiteBackend, audit *Audit) *Site {
	return &Site{backend: backend, audit: audit}
}

// SetBackend sets the backend (once, before serving).
func (s *Site) SetBackend(b SiteBackend) { s.backend = b }

// SetAudit sets the audit log of the changes (once, before serving).
func (s *Site) SetAudit(a *Audit) { s.audit = a }

// SetValues is what the runner reads from now on (the backend sets it
// when the settings change, here or on another instance).
func (s *Site) SetValues(v SiteValues) { s.values.Store(&v) }

// Values are the settings the runner reads; zero before any.
func (s *Site) Values() SiteValues {
	if s == nil {
		return SiteValues{}
	}
	if v := s.values.Load(); v != nil {
		return *v
	}
	return SiteValues{}
}

func siteAdmin(ctx context.Context) error {
	if !PrincipalFrom(ctx).Admin() {
		return Errorf(CodeForbidden, "only an admin may change the server's settings")
	}
	return nil
}

// View is every setting, for an admin.
func (s *Site) View(ctx context.Context) (SiteView, error) {
	if err := siteAdmin(ctx); err != nil {
		return SiteView{}, err
	}
	return s.backend.View(ctx)
}

// Change makes c, for an admin, and records it in the audit log
// ("site.<action>", the provider's or server's name; never a key).
func (s *Site) Change(ctx context.Context, c SiteChange) (SiteView, error) {
	if err := siteAdmin(ctx); err != nil {
		return SiteView{}, err
	}
	if err := s.backend.Change(ctx, c); err != nil {
		return SiteView{}, err
	}
	target, details := c.Name, map[string]any{}
	if c.Provider != nil {
		target = c.Provider.Name
		details["base_url"] = c.Provider.BaseURL
		details["models"] = c.Provider.Models
		details["enabled"] = c.Provider.Enabled
	}
	if c.Enabled != nil {
		details["enabled"] = *c.Enabled
	}
	if c.Value != nil && c.Action != SiteSystemPrompt {
		details["value"] = *c.Value
	}
	s.audit.Record(ctx, "site."+c.Action, target, details)
	return s.backend.View(ctx)
}

// Test asks p for its models, for an admin; nothing is stored.
func (s *Site) Test(ctx context.Context, p SiteProvider) ([]string, error) {
	if err := siteAdmin(ctx); err != nil {
		return nil, err
	}
	return s.backend.Test(ctx, p)
}
