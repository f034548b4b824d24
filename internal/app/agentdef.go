package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"

	"github.com/agentik/agentik/internal/a2a"
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
	Knowledge    []string      `json:"knowledge"` // knowledge bases (vs_…) its turns search
	// A2A makes it a remote agent: another runtime's, reached over A2A.
	A2A *struct {
		URL   string `json:"url"`   // its card's base URL (or the card's URL)
		Token string `json:"token"` // sent as a bearer token; use ${VAR}
	} `json:"a2a"`
}

// loadAgents reads the AGENTIK_AGENTS file, {"agents": [ … ]}, with
// ${VAR} expanded in its strings as in mcp.json, and checks it against the
// tool servers' names: an unknown field, a tool pattern naming no server,
// an unknown delegate or a cycle fails the start, naming it.
//
// An agent with "a2a": {"url", "token"?} is a remote A2A agent; remotes
// holds its URL and credentials, which the stored definition never does.
func loadAgents(path string, getenv func(string) string, servers []string) (defs []agent.AgentDef, remotes map[string]a2a.RemoteAgent, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("AGENTIK_AGENTS: %w", err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("AGENTIK_AGENTS %s: %s", path, fmt.Sprintf(format, args...))
	}
	var top struct {
		Agents []json.RawMessage `json:"agents"`
	}
	if err := strictJSON(data, &top); err != nil {
		return nil, nil, fail("the file must be {\"agents\": [ … ]}: %v", err)
	}
	x := envvar.Expander{Getenv: getenv}
	defs = make([]agent.AgentDef, 0, len(top.Agents))
	remotes = map[string]a2a.RemoteAgent{}
	for i, raw := range top.Agents {
		var a codeAgent
		if err := strictJSON(raw, &a); err != nil {
			return nil, nil, fail("agents[%d]: %v", i, err)
		}
		for _, s := range []*string{&a.Name, &a.Description, &a.Instructions, &a.Model} {
			if *s, err = x.Expand(*s); err != nil {
				return nil, nil, fail("agents[%d] (%s): %v", i, a.Slug, err)
			}
		}
		for j := range a.Starters {
			if a.Starters[j], err = x.Expand(a.Starters[j]); err != nil {
				return nil, nil, fail("agents[%d] (%s): %v", i, a.Slug, err)
			}
		}
		if a.Name == "" {
			a.Name = a.Slug
		}
		if a.Visibility == "" {
			a.Visibility = agent.VisibilityShared
		}
		d := agent.AgentDef{Slug: a.Slug, Name: a.Name, Description: a.Description, Instructions: a.Instructions,
			Model: a.Model, Params: a.Params, Tools: a.Tools, Approval: a.Approval, Visibility: a.Visibility, Starters: a.Starters, Knowledge: a.Knowledge}
		if a.A2A != nil {
			for _, s := range []*string{&a.A2A.URL, &a.A2A.Token} {
				if *s, err = x.Expand(*s); err != nil {
					return nil, nil, fail("agents[%d] (%s): a2a: %v", i, a.Slug, err)
				}
			}
			u, perr := url.Parse(a.A2A.URL)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, nil, fail("agents[%d] (%s): a2a.url must be the http(s) URL of the remote agent (its card's base URL), got %q", i, a.Slug, a.A2A.URL)
			}
			if len(a.Tools) > 0 || a.Instructions != "" || a.Model != "" {
				return nil, nil, fail("agents[%d] (%s): a remote A2A agent answers with its own instructions, model and tools: leave instructions, model and tools out", i, a.Slug)
			}
			d.A2A = a.A2A.URL
			remotes[a.Slug] = a2a.RemoteAgent{URL: a.A2A.URL, Token: a.A2A.Token}
		}
		defs = append(defs, d)
	}
	if err := agent.CheckCodeAgents(defs, servers); err != nil {
		return nil, nil, fail("%v", err)
	}
	return defs, remotes, nil
}

// strictJSON decodes b into v, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
