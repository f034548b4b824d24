package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/relay"
)

// watch follows one task in the log: a conversation subscription from
// the task's first event, folded into a taskView.
type watch struct {
	sub *relay.Sub
	v   *taskView
}

func (w *watch) close() { w.sub.Close() }

// errNoTask answers a task id that does not name a task the caller may see.
func errNoTask(id string) error {
	return rpcErr(codeTaskNotFound, "no task %q", agent.Shorten(id, 80))
}

// open finds the task and folds what is stored of it (to its end, or to
// the log's head while it runs). The conversation is checked first with
// the caller's context: another user's task is not found.
func (h *Handler) open(ctx context.Context, id string) (*watch, agent.Conversation, error) {
	return h.openFrom(ctx, id, false)
}

// openStart is open that stops at the task's first event: the view is the
// task as it started, and what followed comes from the watch's next, as
// updates, whether it happened before the call or after (a streaming send
// shows its answer's progress however fast the turn ran).
func (h *Handler) openStart(ctx context.Context, id string) (*watch, agent.Conversation, error) {
	return h.openFrom(ctx, id, true)
}

func (h *Handler) openFrom(ctx context.Context, id string, startOnly bool) (*watch, agent.Conversation, error) {
	convID, seq, ok := parseTaskID(id)
	if !ok {
		return nil, agent.Conversation{}, errNoTask(id)
	}
	c, err := h.cfg.Conversations.Get(ctx, convID)
	if errors.Is(err, agent.ErrNotFound) {
		return nil, c, errNoTask(id)
	}
	if err != nil {
		return nil, c, err
	}
	sub, err := relay.Conversation(ctx, h.cfg.Broker, convID, seq-1)
	var re *broker.ResyncError
	if errors.As(err, &re) {
		return nil, c, errNoTask(id) // pruned, or a seq beyond the log
	}
	if err != nil {
		return nil, c, err
	}
	w := &watch{sub: sub, v: newTaskView(convID, seq)}
	p := &taskFold{w: w, seq: seq, startOnly: startOnly, first: true}
	// A task this request just started (startOnly) has its first event
	// committed, but the subscription's replay may end before that event
	// is published: it follows on live until the event comes, where a
	// task named by a client that is not in the log is not found.
	err = relay.Follow{UntilCaughtUp: !startOnly}.Run(ctx, sub, p)
	switch {
	case errors.Is(err, relay.ErrLeft):
		err = ctx.Err()
	case err == nil && (p.first || p.bad):
		err = errNoTask(id)
	}
	if err != nil {
		sub.Close()
		return nil, c, err
	}
	return w, c, nil
}

// taskFold is the projection that folds a task's events into its view:
// from its first event (which must start the task at seq: else bad), to
// its end, or to the first event alone (startOnly). until, when set, ends
// it once the task's state meets it; send, when set, makes the frames of
// the updates.
type taskFold struct {
	w         *watch
	seq       int64
	startOnly bool
	first     bool // no event yet: set at start
	bad       bool
	until     func(state string) bool
	send      func(StreamResponse) relay.Frame
}

func (p *taskFold) Event(e *agent.Encoded) ([]relay.Frame, bool) {
	if p.first {
		ev, err := relay.Decode(e)
		if err != nil {
			return nil, false
		}
		p.first = false
		if e.Seq != p.seq || !p.w.v.start(ev) {
			p.bad = true
			return nil, true
		}
		return nil, p.startOnly
	}
	if ignored(e) {
		return nil, false
	}
	ev, err := relay.Decode(e)
	if err != nil {
		return nil, false
	}
	ups := p.w.fold(ev)
	var fs []relay.Frame
	if p.send != nil {
		for _, u := range ups {
			fs = append(fs, p.send(u))
		}
	}
	if p.until != nil {
		return fs, p.until(p.w.v.state)
	}
	return fs, terminal(p.w.v.state)
}

// fold takes one event; a deleted conversation fails the task.
func (w *watch) fold(ev agent.AllEvent) []StreamResponse {
	if ev.Agent != nil {
		if ev.Agent.Type == agent.AgentDeleted && !terminal(w.v.state) {
			w.v.errMsg = "the conversation was deleted"
			return w.v.status(StateFailed, ev.Date)
		}
		return nil
	}
	return w.v.on(ev)
}

// follow folds the task's later events until its state meets until,
// writing the frames of its updates (send: nil for none) to fo's Sink.
func (w *watch) follow(ctx context.Context, fo relay.Follow, until func(string) bool, send func(StreamResponse) relay.Frame) error {
	return fo.Run(ctx, w.sub, &taskFold{w: w, until: until, send: send})
}

// ignored reports whether a task's view takes nothing from e: a
// conversation's message events (the answer is folded from its text
// events, taskView.on). The turn's last one holds the whole answer, so it
// is not decoded for nothing.
func ignored(e *agent.Encoded) bool {
	return e.Kind == agent.KindConversation && e.Type == agent.EventMessage
}

// settled reports whether a send's answer is ready: the task ended or
// waits for someone.
func settled(state string) bool {
	return terminal(state) || state == StateInputRequired || state == StateAuthRequired
}

func historyOf(n *int) int {
	if n == nil {
		return -1
	}
	return *n
}

// start sends the message: a new turn of its context (a new conversation
// without one), or the decision of a task that waits for input. It
// returns the task's id.
func (h *Handler) start(ctx context.Context, a Agent, p sendParams) (string, error) {
	m := p.Message
	if m == nil {
		return "", rpcErr(codeInvalidParams, "message is required")
	}
	if m.Role != RoleUser && m.Role != "user" {
		return "", rpcErr(codeInvalidParams, "message.role must be %q, got %q", RoleUser, agent.Shorten(m.Role, 40))
	}
	if m.MessageID == "" {
		return "", rpcErr(codeInvalidParams, "message.messageId is required")
	}
	if len(m.MessageID) > 200 {
		return "", rpcErr(codeInvalidParams, "message.messageId is %d bytes long; at most 200 are allowed", len(m.MessageID))
	}
	if m.TaskID != "" {
		return h.decide(ctx, m)
	}
	in, err := content(m)
	if err != nil {
		return "", err
	}
	if !h.cfg.Runner.ModelConfigured() {
		return "", agent.Errorf(agent.CodeUnavailable, "no model is configured on this agentik server")
	}
	// The messageId is the send's client id: the same message sent again
	// is the same task, never a second turn. Without a contextId the
	// conversation is made with the message, or not at all.
	start := agent.StartInput{ConversationID: m.ContextID, Content: in, ClientID: m.MessageID}
	if convID := m.ContextID; convID != "" {
		c, err := h.cfg.Conversations.Get(ctx, convID)
		if errors.Is(err, agent.ErrNotFound) {
			return "", rpcErr(codeInvalidParams, "no context %q: leave contextId out to start a new one", agent.Shorten(convID, 80))
		} else if err != nil {
			return "", err
		}
		if of := c.Agent; of != a.Slug && !(of == "" && a.Slug == agent.DefaultAgent) {
			return "", rpcErr(codeInvalidParams, "context %q is agent %s's: send to %s%s, or leave contextId out to start a new one here", convID, of, Prefix, of)
		}
	} else {
		slug := a.Slug
		start.New = &agent.NewConversation{Settings: agent.Settings{Agent: &slug}}
	}
	res, err := h.cfg.Runner.Start(ctx, start)
	if err != nil {
		return "", err
	}
	return taskID(res.ConversationID, res.Seq), nil
}

// startPushed is start, then the push config the send carries stored for
// its task.
func (h *Handler) startPushed(ctx context.Context, a Agent, p sendParams) (string, error) {
	var pc *PushConfig
	if p.Configuration != nil && len(p.Configuration.PushConfig) > 0 && string(p.Configuration.PushConfig) != "null" {
		pc = &PushConfig{}
		if err := json.Unmarshal(p.Configuration.PushConfig, pc); err != nil {
			return "", rpcErr(codeInvalidParams, "configuration.taskPushNotificationConfig is malformed: %v", err)
		}
		if h.cfg.KV == nil {
			return "", rpcErr(codePushUnsupported, "push notifications are not served by this agentik")
		}
		if err := h.cfg.PushAllow.checkURL(ctx, pc.URL); err != nil { // before the turn starts
			return "", err
		}
	}
	id, err := h.start(ctx, a, p)
	if err != nil || pc == nil {
		return id, err
	}
	pc.TaskID = id
	if _, err = h.addConfig(ctx, *pc); err == nil {
		// The turn may have ended before its config was stored: the
		// deliverer, here or on another instance, checks.
		h.LateConfig(id)
		if tell := h.tell.Load(); tell != nil {
			(*tell)(id)
		}
	}
	return id, err
}

// decision is the data part that answers an input-required task.
type decision struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	CallID   string `json:"call_id"`
}

// decide answers the tool calls an input-required task waits for.
func (h *Handler) decide(ctx context.Context, m *Message) (string, error) {
	w, c, err := h.open(ctx, m.TaskID)
	if err != nil {
		return "", err
	}
	state := w.v.state
	w.close()
	if m.ContextID != "" && m.ContextID != c.ID {
		return "", rpcErr(codeInvalidParams, "message.contextId %q is not the context of task %q", agent.Shorten(m.ContextID, 80), m.TaskID)
	}
	if state != StateInputRequired {
		return "", rpcErr(codeUnsupported, "task %s is %s, not waiting for input: send a new message without taskId (with contextId %s) to continue the conversation", m.TaskID, strings.ToLower(strings.TrimPrefix(state, "TASK_STATE_")), c.ID)
	}
	var d *decision
	for _, p := range m.Parts {
		if len(p.Data) == 0 {
			continue
		}
		var x decision
		if err := json.Unmarshal(p.Data, &x); err == nil && x.Decision != "" {
			d = &x
			break
		}
	}
	if d == nil {
		return "", rpcErr(codeInvalidParams, `task %s waits for approval of a tool call: answer with a data part {"decision":"approve"|"deny","reason"?,"call_id"?}`, m.TaskID)
	}
	calls := c.Waiting
	if d.CallID != "" {
		calls = []string{d.CallID}
	}
	for _, id := range calls {
		err := h.cfg.Runner.Approve(ctx, c.ID, agent.ApprovalInput{CallID: id, Decision: d.Decision, Reason: d.Reason})
		if err != nil && !(agent.ErrorCode(err) == agent.CodeConflict && d.CallID == "") {
			return "", err // a call decided meanwhile (in the UI) is no error when deciding them all
		}
	}
	return m.TaskID, nil
}

// send sends the message and, unless it asks to return at once, waits
// for its task to settle (end, or wait for input).
func (h *Handler) send(ctx context.Context, a Agent, p sendParams) (Task, error) {
	id, err := h.startPushed(ctx, a, p)
	if err != nil {
		return Task{}, err
	}
	w, _, err := h.open(ctx, id)
	if err != nil {
		return Task{}, err
	}
	defer w.close()
	blocking := p.Configuration == nil || !p.Configuration.ReturnImmediately
	if blocking && !settled(w.v.state) {
		if err := w.follow(ctx, relay.Follow{}, settled, nil); err != nil {
			if errors.Is(err, relay.ErrLeft) {
				err = ctx.Err()
			}
			return Task{}, err
		}
	}
	return w.v.task(historyOf(p.history())), nil
}

func (h *Handler) getTask(ctx context.Context, p taskParams) (Task, error) {
	w, _, err := h.open(ctx, p.ID)
	if err != nil {
		return Task{}, err
	}
	defer w.close()
	return w.v.task(historyOf(p.HistoryLength)), nil
}

func (h *Handler) cancelTask(ctx context.Context, p taskParams) (Task, error) {
	w, c, err := h.open(ctx, p.ID)
	if err != nil {
		return Task{}, err
	}
	state := w.v.state
	w.close()
	if terminal(state) {
		return Task{}, rpcErr(codeNotCancelable, "task %s is %s already", p.ID, strings.ToLower(strings.TrimPrefix(state, "TASK_STATE_")))
	}
	if _, err := h.cfg.Runner.Interrupt(ctx, c.ID); err != nil {
		return Task{}, err
	}
	w, _, err = h.open(ctx, p.ID)
	if err != nil {
		return Task{}, err
	}
	defer w.close()
	return w.v.task(historyOf(p.HistoryLength)), nil
}

// maxListPage caps a page of ListTasks.
const maxListPage = 100

// listTasks lists the tasks of one context, newest first, from its
// history: a task's state is read from the messages that follow its
// user message (an error: failed; an interrupted answer: canceled) and
// from the conversation (its running turn).
func (h *Handler) listTasks(ctx context.Context, p listParams) (ListTasksResponse, error) {
	var none ListTasksResponse
	if p.ContextID == "" {
		return none, rpcErr(codeInvalidParams, "contextId is required: agentik lists the tasks of one context (its conversations are listed at GET /agentik/conversations)")
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > maxListPage {
			return none, rpcErr(codeInvalidParams, "pageSize must be 1 to %d, got %d", maxListPage, *p.PageSize)
		}
		size = *p.PageSize
	}
	offset := 0
	if p.PageToken != "" {
		n, err := strconv.Atoi(p.PageToken)
		if err != nil || n < 0 {
			return none, rpcErr(codeInvalidParams, "pageToken %q is not one ListTasks gave", agent.Shorten(p.PageToken, 40))
		}
		offset = n
	}
	c, err := h.cfg.Conversations.Get(ctx, p.ContextID)
	if errors.Is(err, agent.ErrNotFound) {
		return none, rpcErr(codeInvalidParams, "no context %q", agent.Shorten(p.ContextID, 80))
	}
	if err != nil {
		return none, err
	}
	var msgs []agent.Message
	for {
		page, err := h.cfg.Conversations.Messages(ctx, agent.MessageQuery{ConversationID: c.ID, Offset: len(msgs), Limit: agent.MaxPageSize})
		if err != nil {
			return none, err
		}
		msgs = append(msgs, page...)
		if len(page) < agent.MaxPageSize {
			break
		}
	}
	tasks := listed(c, msgs, historyOf(p.HistoryLength), p.IncludeArtifacts)
	switch p.Status {
	case "", "TASK_STATE_UNSPECIFIED", "UNRECOGNIZED": // the SDK's unset filter
		p.Status = ""
	case StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled, StateInputRequired, "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED":
	default:
		return none, rpcErr(codeInvalidParams, "status %q is not a task state (TASK_STATE_WORKING, TASK_STATE_COMPLETED, …)", agent.Shorten(p.Status, 40))
	}
	if p.Status != "" {
		kept := tasks[:0]
		for _, t := range tasks {
			if t.Status.State == p.Status {
				kept = append(kept, t)
			}
		}
		tasks = kept
	}
	total := len(tasks)
	res := ListTasksResponse{Tasks: []Task{}, PageSize: size, TotalSize: total}
	if offset < total {
		end := min(total, offset+size)
		res.Tasks = tasks[offset:end]
		if end < total {
			res.NextPageToken = strconv.Itoa(end)
		}
	}
	return res, nil
}

// listed makes the tasks of a conversation's history, newest first.
func listed(c agent.Conversation, msgs []agent.Message, history int, artifacts bool) []Task {
	var out []Task
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Type != agent.MessageUser {
			continue
		}
		v := newTaskView(c.ID, m.Seq)
		v.user = &msgs[i]
		v.at = m.Date
		state := StateCompleted
		var text []string
		for j := i + 1; j < len(msgs) && msgs[j].Type != agent.MessageUser; j++ {
			n := msgs[j]
			v.at = n.Date
			switch n.Type {
			case agent.MessageError:
				state, v.errMsg = StateFailed, agent.FailureText(n.Code, n.Error)
			case agent.MessageAssistant:
				if n.Interrupted && state != StateFailed {
					state = StateCanceled // unless an error ended it (a restart)
				}
				for _, p := range n.Content {
					if p.Type == agent.ContentText && p.Body != "" {
						text = append(text, p.Body)
					}
				}
			}
		}
		if c.Running && c.TurnSeq == m.Seq {
			state = StateWorking
			if len(c.Waiting) > 0 {
				state = StateInputRequired
				for _, id := range c.Waiting {
					v.waiting = append(v.waiting, waitingCall{CallID: id})
				}
			}
		}
		v.state = state
		if artifacts {
			v.text.WriteString(strings.Join(text, "\n\n"))
		}
		out = append(out, v.task(history))
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
