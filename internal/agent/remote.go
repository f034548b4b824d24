package agent

import "context"

// Remote agents: an agent defined as code with an A2A URL (AgentDef.A2A)
// is another runtime's agent. Its conversations are agentik conversations
// like any other (stored, live, resumable by every client); only the
// answer of each turn comes from the remote agent instead of the model.
// Local agents delegate to it as to a local one (agent__<slug>): the
// child conversation's turn asks the remote agent, and its streamed answer
// is the child's streamed text, which the parent's tool card shows live.

// Remote asks remote agents. The A2A client (package a2a) implements it.
type Remote interface {
	// Ask sends content as one message to remote agent slug and streams
	// its answer's text to on, in order, each piece once (a dropped
	// stream is resumed by the implementation); it returns the whole
	// answer. Failures are *Error (CodeModelError, CodeUnavailable); a
	// cancelled ctx cancels the remote task and returns ctx.Err().
	Ask(ctx context.Context, slug string, content []Content, on func(Delta) error) (ChatResponse, error)
}

// remote is the turn's "model call" for a remote agent: its last user
// message, asked of the remote agent.
func (t *turn) remote(mem []ModelMessage, on func(Delta) error) (ChatResponse, error) {
	if t.r.cfg.Remote == nil {
		return ChatResponse{}, Errorf(CodeUnavailable, "agent %s is a remote A2A agent, and this server reaches none", t.agent.Slug)
	}
	var content []Content
	for i := len(mem) - 1; i >= 0; i-- {
		if mem[i].Role == RoleUser {
			content = mem[i].Content
			break
		}
	}
	if len(content) == 0 {
		return ChatResponse{}, Errorf(CodeBadRequest, "agent %s is a remote A2A agent: it answers a user message, and there is none", t.agent.Slug)
	}
	return t.r.cfg.Remote.Ask(t.ctx, t.agent.Slug, content, on)
}
