package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Values of requireApproval and of AGENTIK_TOOL_APPROVAL.
const (
	ApprovalAlways = "always"
	ApprovalNever  = "never"
)

// Approval says which tools of a server wait for a person's decision
// before they run (DESIGN.md §10.2): every tool when Default is true, none
// when false, with the tools in Except the other way round.
type Approval struct {
	Default bool
	Except  []string // the server's own tool names
}

// Needs reports whether a call of the server's tool waits for a decision.
func (a Approval) Needs(tool string) bool { return a.Default != slices.Contains(a.Except, tool) }

// DefaultApproval reads AGENTIK_TOOL_APPROVAL: the policy of servers whose
// entry has no requireApproval (never when unset).
func DefaultApproval(getenv func(string) string) (Approval, error) {
	switch v := strings.TrimSpace(getenv("AGENTIK_TOOL_APPROVAL")); v {
	case "", ApprovalNever:
		return Approval{}, nil
	case ApprovalAlways:
		return Approval{Default: true}, nil
	default:
		return Approval{}, &ConfigError{Field: "AGENTIK_TOOL_APPROVAL", Msg: fmt.Sprintf("must be %q or %q, got %q", ApprovalAlways, ApprovalNever, v)}
	}
}

// offers reports whether the model is offered the server's tool:
// allowedTools (when set) lists it and excludedTools does not.
func (s ServerConfig) offers(tool string) bool {
	if s.AllowedTools != nil && !slices.Contains(s.AllowedTools, tool) {
		return false
	}
	return !slices.Contains(s.ExcludedTools, tool)
}

// parsePolicy reads an entry's requireApproval, allowedTools and
// excludedTools into sc; def is the policy without requireApproval.
func parsePolicy(sc *ServerConfig, e entryJSON, def Approval) error {
	fail := func(field, format string, args ...any) error {
		return &ConfigError{Server: sc.Name, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	sc.Approval = def
	if raw := bytes.TrimSpace(e.RequireApproval); len(raw) > 0 && !isNull(raw) {
		var mode string
		var lists map[string]json.RawMessage
		switch {
		case json.Unmarshal(raw, &mode) == nil:
			switch mode {
			case ApprovalAlways:
				sc.Approval = Approval{Default: true}
			case ApprovalNever:
				sc.Approval = Approval{}
			default:
				return fail("requireApproval", `must be "always", "never", {"always":[tool…]} or {"never":[tool…]}, got %q`, mode)
			}
		case json.Unmarshal(raw, &lists) == nil && lists != nil:
			if len(lists) != 1 {
				return fail("requireApproval", `an object must have exactly one key, "always" or "never"`)
			}
			for k, v := range lists {
				if k != ApprovalAlways && k != ApprovalNever {
					return fail("requireApproval", `unknown key %q: use "always" or "never"`, k)
				}
				tools, err := toolList(v)
				if err != nil {
					return fail("requireApproval."+k, "%v", err)
				}
				// {"always":[a]}: a needs approval, the rest not; {"never":[a]}: the other way round.
				sc.Approval = Approval{Default: k == ApprovalNever, Except: tools}
			}
		default:
			return fail("requireApproval", `must be "always", "never", {"always":[tool…]} or {"never":[tool…]}`)
		}
	}
	var err error
	if sc.AllowedTools, err = optToolList(e.AllowedTools); err != nil {
		return fail("allowedTools", "%v", err)
	}
	if sc.ExcludedTools, err = optToolList(e.ExcludedTools); err != nil {
		return fail("excludedTools", "%v", err)
	}
	return nil
}

// toolList decodes a list of tool names: non-empty strings.
func toolList(raw json.RawMessage) ([]string, error) {
	var tools []string
	if err := json.Unmarshal(raw, &tools); err != nil || tools == nil {
		return nil, fmt.Errorf("must be an array of tool names")
	}
	for i, t := range tools {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("item %d is an empty tool name", i)
		}
	}
	return tools, nil
}

// optToolList is toolList of an optional field: nil when absent.
func optToolList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	return toolList(raw)
}

// NeedsApproval reports whether a call of the tool the model knows as name
// waits for a person's decision, by its server's policy. An unknown name
// does not (its call fails anyway).
func (m *Manager) NeedsApproval(name string) bool {
	m.mu.RLock()
	ref, ok := m.names[name]
	m.mu.RUnlock()
	return ok && ref.srv.cfg.Approval.Needs(ref.tool)
}

// AppOnly reports whether only the MCP Apps of its server may call the
// tool the model would know as name (its _meta.ui.visibility is
// ["app"]): it is not offered to the model (agent.Config.AppOnly).
func (m *Manager) AppOnly(name string) bool {
	m.mu.RLock()
	ref, ok := m.names[name]
	m.mu.RUnlock()
	return ok && !ref.model
}
