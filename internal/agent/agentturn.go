package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// AgentModelPrefix makes a model id of an agent: "agent/<slug>" names the
// agent wherever a model id is taken (/v1's model, a conversation's model).
const AgentModelPrefix = "agent/"

// checkAgentSetting resolves the agent a create or an update names (its
// slug, or a model "agent/<slug>"): "" is the default agent; an unknown,
// deleted or invisible one is not_found, naming the field.
func (r *Runner) checkAgentSetting(ctx context.Context, s *Settings) error {
	field := "agent"
	if s.Model != nil {
		if slug, ok := strings.CutPrefix(strings.TrimSpace(*s.Model), AgentModelPrefix); ok {
			s.Agent, s.Model, field = &slug, nil, "model"
		}
	}
	if s.Agent == nil {
		return nil
	}
	slug := strings.TrimSpace(*s.Agent)
	if slug == "" {
		slug = DefaultAgent
	}
	d, err := r.agent(ctx, slug)
	if errors.Is(err, ErrNotFound) || (err == nil && d.Deleted) {
		return Errorf(CodeNotFound, "%s names agent %q, which does not exist; GET /agentik/agents lists them", field, Shorten(slug, 60))
	}
	if err != nil {
		return err
	}
	s.Agent = &slug
	return nil
}

// systemPromptOf is what a new conversation on agent slug starts its
// working memory with: the agent's instructions, else the server's prompt.
func (r *Runner) systemPromptOf(ctx context.Context, slug string) string {
	// The default agent's are the server's prompt as it is now (the admin
	// panel changes it: site.go), not as it was stored at start.
	if d, err := r.agentOf(ctx, slug); err == nil && d.Instructions != "" && d.Slug != DefaultAgent {
		return d.Instructions
	}
	return r.SystemPrompt()
}

// agentOf is the latest version of a conversation's agent, deleted or not
// (a conversation keeps working on its agent's last version); "" is the
// default agent.
func (r *Runner) agentOf(ctx context.Context, slug string) (AgentDef, error) {
	if slug == "" {
		slug = DefaultAgent
	}
	d, err := r.agents().Agent(ctx, slug)
	if errors.Is(err, ErrNotFound) && slug == DefaultAgent {
		return r.defaultAgent(), nil
	}
	return d, err
}

// depthOf is how many delegations led to conversation c: 0 for one a
// person started.
func (r *Runner) depthOf(ctx context.Context, c Conversation) int {
	n := 0
	for c.Parent != nil && n <= MaxDelegationDepth {
		p, err := r.conversation(ctx, c.Parent.ConversationID)
		n++
		if err != nil {
			break
		}
		c = p
	}
	return n
}

// useAgent resolves the turn's agent and applies it to what the turn asks
// the model: the conversation's own settings win, the agent's fill in.
func (t *turn) useAgent() error {
	ctx := context.WithoutCancel(t.ctx)
	d, err := t.r.agentOf(ctx, t.conv.Agent)
	if err != nil {
		return fmt.Errorf("agent of conversation %s: %w", t.conv.ID, err)
	}
	t.agent = d
	t.project, _ = t.r.projectOf(t.conv)
	t.depth = t.r.depthOf(ctx, t.conv)
	// The default agent's instructions are the prompt working memory
	// starts with; a conversation of a /v1 client keeps its own.
	if t.conv.SystemPrompt == "" && d.Instructions != "" && d.Instructions != t.r.SystemPrompt() && d.Slug != DefaultAgent {
		t.conv.SystemPrompt = d.Instructions
	}
	if t.conv.Model == "" {
		t.conv.Model = d.Model
	}
	if t.conv.Params == nil {
		t.conv.Params = d.Params
	}
	return nil
}

// ExcludePrefix starts an agent's tool entry that takes tools away: "-"
// then a pattern ("-memory_*" turns the built-in memory tools off).
const ExcludePrefix = "-"

// allows reports whether the turn's agent may call tool name: one no
// exclusion matches, and a server's tool its patterns match and the
// conversation's tool choice takes, an agent it lists, or a built-in
// memory tool (offered unless excluded).
func (t *turn) allows(name string) bool {
	for _, p := range t.agent.Tools {
		if ex, ok := strings.CutPrefix(p, ExcludePrefix); ok {
			if m, _ := path.Match(ex, name); m {
				return false
			}
		}
	}
	if IsMemoryTool(name) || name == ToolFileSearch {
		return true
	}
	if strings.HasPrefix(name, DelegatePrefix) {
		return slices.Contains(t.agent.Tools, name)
	}
	if !offersTool(t.conv, name) { // the conversation's own choice narrows the agent's (settings.go)
		return false
	}
	for _, p := range t.agent.Tools {
		if strings.HasPrefix(p, DelegatePrefix) || strings.HasPrefix(p, ExcludePrefix) {
			continue
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// toolSpecs are the tools the turn offers the model: the servers' tools
// its agent allows, and its delegates (unless the conversation is as deep
// as delegation goes).
func (t *turn) toolSpecs() []ToolSpec {
	var specs []ToolSpec
	if t.r.cfg.Tools != nil {
		for _, s := range t.r.cfg.Tools.Specs(t.ctx) {
			if t.allows(s.Name) && !IsMemoryTool(s.Name) && s.Name != ToolFileSearch {
				specs = append(specs, s)
			}
		}
	}
	specs = append(specs, t.memorySpecs()...)    // memory.go
	specs = append(specs, t.fileSearchSpec()...) // knowledge.go
	if t.depth >= MaxDelegationDepth {
		return specs
	}
	for _, slug := range delegates(t.agent) {
		d, err := t.r.agents().Agent(context.WithoutCancel(t.ctx), slug)
		if err != nil || d.Deleted {
			continue
		}
		specs = append(specs, delegateSpec(d))
	}
	return specs
}

// delegateParams is the schema of a delegation's one argument.
var delegateParams = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"What to ask the agent: the whole task, since it sees nothing else of this conversation"}},"required":["message"]}`)

// delegateSpec is the tool by which an agent delegates to d.
func delegateSpec(d AgentDef) ToolSpec {
	desc := "Delegate a task to the agent " + d.Name
	if d.Description != "" {
		desc += ": " + d.Description
	}
	desc += ". It answers with its result."
	return ToolSpec{Name: DelegatePrefix + d.Slug, Description: desc, Parameters: delegateParams}
}

// needsApproval reports whether call c waits for a person: the agent's
// approval override, else the tool servers' policy (a delegation waits
// only when the agent says always). A call the agent may not use never
// does, nor the model's call of a tool only apps may call: nobody is asked
// to allow what policy forbids, and the call is refused at once as a tool
// error the model reads.
func (t *turn) needsApproval(c ToolCall) bool {
	name := c.Name
	if !t.allows(name) && !t.isClientTool(name) {
		return false
	}
	if !isAppCall(c.ID) && t.r.cfg.AppOnly != nil && t.r.cfg.AppOnly(name) {
		return false // the model's call of an app's tool: refused when called
	}
	switch t.agent.Approval {
	case ApprovalAlways:
		return true
	case ApprovalNever:
		return false
	}
	if strings.HasPrefix(name, DelegatePrefix) || IsMemoryTool(name) || name == ToolFileSearch {
		return false
	}
	return t.r.needsApproval(name)
}

// answerOf marks an assistant message with the agent and the version of it
// that the turn ran with, and the model that wrote it.
func (t *turn) answerOf(m Message) Message {
	m.Agent, m.AgentVersion = t.agent.Slug, t.agent.Version
	m.Model = cmp.Or(t.conv.Model, t.r.DefaultModelName()) // the admin panel's default as it is now
	if m.Type == MessageAssistant && len(t.citations) > 0 {
		m.Citations = slices.Clone(t.citations)
	}
	return m
}
