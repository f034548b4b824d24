package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/envvar"
)

// codeAgent is one agent of the AGENTIK_AGENTS file: the fields of an
// agent a person may set (docs/PROTOCOL.md, Agents).
type codeAgent struct {
	Slug         string        `json:"slug"`
	Name         string        `json:"name"`
	Description  string        `json:"description"`
	Instructions string        `json:"instructions"`
	Model        string        `json:"model"`
	Params       *agent.Params `json:"params"`
	Tools        []string      `json:"tools"`
	Approval     string        `json:"approval"`
	Visibility   string        `json:"visibility"`
	Starters     []string      `json:"starters"`
}

// loadAgents reads the AGENTIK_AGENTS file, {"agents": [ … ]}, with
// ${VAR} expanded in its strings as in mcp.json, and checks it against the
// tool servers' names: an unknown field, a tool pattern naming no server,
// an unknown delegate or a cycle fails the start, naming it.
func loadAgents(path string, getenv func(string) string, servers []string) ([]agent.AgentDef, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("AGENTIK_AGENTS: %w", err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("AGENTIK_AGENTS %s: %s", path, fmt.Sprintf(format, args...))
	}
	var top struct {
		Agents []json.RawMessage `json:"agents"`
	}
	if err := strictJSON(data, &top); err != nil {
		return nil, fail("the file must be {\"agents\": [ … ]}: %v", err)
	}
	x := envvar.Expander{Getenv: getenv}
	defs := make([]agent.AgentDef, 0, len(top.Agents))
	for i, raw := range top.Agents {
		var a codeAgent
		if err := strictJSON(raw, &a); err != nil {
			return nil, fail("agents[%d]: %v", i, err)
		}
		for _, s := range []*string{&a.Name, &a.Description, &a.Instructions, &a.Model} {
			if *s, err = x.Expand(*s); err != nil {
				return nil, fail("agents[%d] (%s): %v", i, a.Slug, err)
			}
		}
		for j := range a.Starters {
			if a.Starters[j], err = x.Expand(a.Starters[j]); err != nil {
				return nil, fail("agents[%d] (%s): %v", i, a.Slug, err)
			}
		}
		if a.Name == "" {
			a.Name = a.Slug
		}
		if a.Visibility == "" {
			a.Visibility = agent.VisibilityShared
		}
		defs = append(defs, agent.AgentDef{Slug: a.Slug, Name: a.Name, Description: a.Description, Instructions: a.Instructions,
			Model: a.Model, Params: a.Params, Tools: a.Tools, Approval: a.Approval, Visibility: a.Visibility, Starters: a.Starters})
	}
	if err := agent.CheckCodeAgents(defs, servers); err != nil {
		return nil, fail("%v", err)
	}
	return defs, nil
}

// strictJSON decodes b into v, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
