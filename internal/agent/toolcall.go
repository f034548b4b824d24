package agent

import (
	"context"
	"slices"
	"sync"
)

// ToolOutput is what a tool call returned: the text the model reads and
// the images that came with it (a tool's screenshot, a chart), shown in
// the tool card and passed to a model with vision as images, and the
// resources it linked or embedded (MCP resource_link and resource
// content), shown in the card for the user to open or attach; the model
// reads about them in the text.
type ToolOutput struct {
	Text      string
	Images    []Content // ContentImage parts
	Resources []Content // ContentResource parts: server, uri, name, mime
}

// ContentTools is Tools whose calls may return images besides text; the
// runner calls Config.ContentTools, when set, instead of Tools.Call.
type ContentTools interface {
	CallContent(ctx context.Context, name, arguments string) (ToolOutput, error)
}

// Progress is a tool call's progress, as the tool reports it (MCP
// notifications/progress): Progress of Total (0: unknown), with an
// optional message.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// ToolHooks let the adapter that runs one tool call reach back into the
// turn while the call runs: to show its progress, and to ask the user for
// input the tool needs (an MCP elicitation). The runner puts them in the
// context of each call (WithToolHooks); an adapter reads them with
// ToolHooksFrom. Both are safe to call from any goroutine until the call
// returns, and do nothing after.
type ToolHooks struct {
	// Progress shows the call's progress live (a tool_progress event). It
	// never blocks: under load, progress is dropped rather than delayed.
	Progress func(Progress)
	// Elicit asks the user and waits for the answer (see elicit.go); it
	// returns early with an error when the call's context ends.
	Elicit func(ctx context.Context, req ElicitRequest) (ElicitResult, error)
	// Owner is the conversation's owner: whose own credentials a
	// per-user tool server uses, whoever started the turn.
	Owner string
	// App says an MCP App made the call (appcall.go), not the model: the
	// tools each may call differ (ToolServer.Visibility).
	App bool
}

type toolHooksKey struct{}

// WithToolHooks returns ctx carrying h for the tool call it bounds.
func WithToolHooks(ctx context.Context, h *ToolHooks) context.Context {
	return context.WithValue(ctx, toolHooksKey{}, h)
}

// ToolHooksFrom returns the hooks of the tool call ctx belongs to, or nil.
func ToolHooksFrom(ctx context.Context) *ToolHooks {
	h, _ := ctx.Value(toolHooksKey{}).(*ToolHooks)
	return h
}

// callScope is one running tool call of a turn, as its hooks see it.
type callScope struct {
	t    *turn
	call ToolCall
	// rest is the round's calls from this one on (client tools left out):
	// the round stored when the call first waits for the user, so a
	// restart resumes it (elicit.go).
	rest []ToolCall
	// replay are the stored answers to this call's elicitations, by
	// index: a call run again after a restart gets them at once.
	replay []Elicitation

	mu     sync.Mutex
	done   bool // the call returned: hooks do nothing
	asked  int  // elicitations so far
	parked bool // a shutdown ended an elicitation wait, which stays stored
	wg     sync.WaitGroup
}

// hooks are the ToolHooks of the scope.
func (s *callScope) hooks() *ToolHooks {
	return &ToolHooks{Progress: s.progress, Elicit: s.elicit, Owner: OwnerOf(s.t.conv), App: isAppCall(s.call.ID)}
}

// enter reports whether a hook may run, and counts it until leave.
func (s *callScope) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.wg.Add(1)
	return true
}

// finish ends the scope once the call returned: it waits for hooks still
// running (an elicitation writing its end), so nothing is written for the
// call after its result.
func (s *callScope) finish() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *callScope) progress(p Progress) {
	if !s.enter() {
		return
	}
	defer s.wg.Done()
	ev := Event{Type: EventToolProgress, CallID: s.call.ID, Name: s.call.Name, Progress: &ToolProgress{Progress: p.Progress, Total: p.Total, Message: Shorten(p.Message, maxProgressMessage)}}
	select {
	case s.t.items <- emitItem{rec: &Record{Event: s.t.r.event(s.t.conv.ID, ev)}}:
	default: // the writer is behind: this progress is dropped, the next one tells
	}
}

// maxProgressMessage caps a progress message.
const maxProgressMessage = 500

// ToolProgress is the payload of a tool_progress event.
type ToolProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// runTool calls the tool of c through Tools with the call's hooks in its
// context; rest is the round's calls from c on.
func (t *turn) runTool(c ToolCall, rest []ToolCall) (ToolOutput, *callScope, error) {
	s := &callScope{t: t, call: c, rest: rest}
	if es := t.r.elicitsOf(t.conv.ID); es != nil && t.resume != nil {
		if all, err := es.Elicitations(context.WithoutCancel(t.ctx), t.conv.ID); err == nil {
			for _, e := range all {
				if e.CallID == c.ID && e.Answered {
					s.replay = append(s.replay, e)
				}
			}
		}
	}
	ctx := WithToolHooks(t.ctx, s.hooks())
	var out ToolOutput
	var err error
	if ct := t.r.cfg.ContentTools; ct != nil {
		out, err = ct.CallContent(ctx, c.Name, c.Arguments)
	} else {
		out.Text, err = t.r.cfg.Tools.Call(ctx, c.Name, c.Arguments)
	}
	s.finish()
	return out, s, err
}

// toolImages drops the images of tool results from mem unless the
// conversation's model takes images (the model sees their description in
// the result's text instead); a model with vision gets them.
func (t *turn) toolImages(mem []ModelMessage) []ModelMessage {
	if m, ok := t.r.ModelOf(t.conv); !ok || m.Vision {
		return mem
	}
	var out []ModelMessage
	for i, m := range mem {
		if m.Role != RoleTool || !hasImage(m.Content) {
			continue
		}
		if out == nil {
			out = slices.Clone(mem)
		}
		out[i].Content = slices.DeleteFunc(slices.Clone(m.Content), func(c Content) bool { return c.Type == ContentImage })
	}
	if out == nil {
		return mem
	}
	return out
}
