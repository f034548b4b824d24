package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// childPoll is how often a delegation also reads its child's state while
// waiting for the child's turn to end, for a child whose turn resumed on
// another instance (an approval decided there); a turn ending here wakes
// it at once (endSignal).
const childPoll = time.Second

// delegate runs a call of agent__<slug>: the other agent answers the
// call's message in a child conversation linked to this call (its Parent),
// whose events stream on their own; the parent's stream carries a
// delegation event naming it, so a client shows the child's work live in
// the tool card. The child's last answer is the call's result. An
// interrupt of the parent interrupts the child.
func (t *turn) delegate(c ToolCall) Message {
	m := Message{Type: MessageToolResult, ConversationID: t.conv.ID, CallID: c.ID, Name: c.Name}
	fail := func(format string, args ...any) Message {
		m.Result, m.IsError = fmt.Sprintf(format, args...), true
		return m
	}
	slug := strings.TrimPrefix(c.Name, DelegatePrefix)
	switch {
	case t.ctx.Err() != nil:
		return fail("interrupted before the agent ran")
	case !t.allows(c.Name):
		return fail("agent %s may not delegate to %q: it is not among its tools", t.agent.Slug, slug)
	case t.depth >= MaxDelegationDepth:
		return fail("delegation goes at most %d agents deep; answer without %s", MaxDelegationDepth, c.Name)
	}
	var args struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(c.Arguments), &args) != nil || strings.TrimSpace(args.Message) == "" {
		return fail(`%s takes {"message": "…"}: the task for the agent`, c.Name)
	}
	// The child is the parent's owner's, whoever's action runs the turn.
	owner := Principal{UserID: OwnerOf(t.conv), Role: RoleMember}
	if owner.UserID == LocalUser {
		owner = Local
	}
	ctx := WithPrincipal(context.WithoutCancel(t.ctx), owner)
	d, err := t.r.agents().Agent(ctx, slug)
	if err != nil || d.Deleted {
		return fail("agent %q is not available", slug)
	}
	title := Shorten(d.Name+": "+firstLine(args.Message), 120)
	child, err := t.r.create(ctx, NewID(), NewConversation{Title: title, Temp: t.conv.Temp, Settings: Settings{Agent: &slug}}, &Parent{ConversationID: t.conv.ID, CallID: c.ID})
	if err != nil {
		return fail("could not start agent %q: %v", slug, err)
	}
	m.ChildID = child.ID
	if err := t.live(Event{Type: EventDelegation, CallID: c.ID, Name: c.Name, ChildID: child.ID, Agent: slug}); err != nil {
		return fail("%v", err)
	}
	res, err := t.r.Start(ctx, StartInput{ConversationID: child.ID, Content: []Content{Text(args.Message)}})
	if err != nil {
		return fail("could not start agent %q: %v", slug, err)
	}
	if _, err := t.r.awaitIdle(t.ctx, child.ID); err != nil {
		if t.ctx.Err() != nil {
			_, _ = t.r.Interrupt(ctx, child.ID)
			return fail("interrupted while agent %s worked", slug)
		}
		return fail("agent %q: %v", slug, err)
	}
	answer, err := t.r.lastAnswer(ctx, child.ID, res.Seq)
	if err != nil {
		return fail("agent %q: %v", slug, err)
	}
	m.Result = answer
	return m
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// endSignal is closed when the next turn of this runner ends (forget).
func (r *Runner) endSignal() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.endCh == nil {
		r.endCh = make(chan struct{})
	}
	return r.endCh
}

// awaitIdle waits until conversation id has no turn (one parked for an
// approval still counts as running), or ctx ends.
func (r *Runner) awaitIdle(ctx context.Context, id string) (Conversation, error) {
	tick := time.NewTicker(childPoll)
	defer tick.Stop()
	for {
		sig := r.endSignal()
		c, err := r.Conversation(context.WithoutCancel(ctx), id)
		if err != nil || !c.Running {
			return c, err
		}
		select {
		case <-sig:
		case <-tick.C:
		case <-ctx.Done():
			return c, context.Cause(ctx)
		}
	}
}

// lastAnswer is what the turn that started after seq answered: its last
// answer's text, or the error it ended with.
func (r *Runner) lastAnswer(ctx context.Context, id string, seq int64) (string, error) {
	var answer string
	var failure *Error
	for off := 0; ; off += MaxPageSize {
		ms, err := r.Messages(ctx, MessageQuery{ConversationID: id, After: seq, Offset: off, Limit: MaxPageSize})
		if err != nil {
			return "", err
		}
		for _, m := range ms {
			switch m.Type {
			case MessageAssistant:
				if txt := textOf(m.Content); txt != "" {
					answer, failure = txt, nil
				}
			case MessageError:
				failure = Errorf(m.Code, "%s", m.Error)
			}
		}
		if len(ms) < MaxPageSize {
			break
		}
	}
	if failure != nil {
		return "", failure
	}
	if answer == "" {
		return "", Errorf(CodeToolError, "the agent gave no answer")
	}
	return answer, nil
}

func textOf(cs []Content) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Type == ContentText {
			b.WriteString(c.Body)
		}
	}
	return b.String()
}
