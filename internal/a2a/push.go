package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// Push notifications: a task's configs are kept in the database's
// key-value table (KV) under pushKey(task); one deliverer (PushDeliverer)
// follows the whole event log from a cursor kept there too, and when a
// task settles (it completes, fails, is canceled, or needs input) records
// the task as pending (a cursor per task, so the log's cursor moves on)
// and POSTs the task as it stands to each of its configs' URLs from a
// bounded pool of workers: per receiving host and per owner at most a
// few at once, each task's deliveries within a time cap, so that one
// member's dead receivers hold up nobody else's. Pushes are signed with
// agentik's push key (pushkey.go), Standard Webhooks' asymmetric v1a.

// KV is the database's key-value table (store.Store's Cursor/SetCursor).
type KV interface {
	Cursor(ctx context.Context, key string) (string, error) // agent.ErrNotFound when unset
	SetCursor(ctx context.Context, key, value string) error
}

// maxPushConfigs caps the configs of one task.
const maxPushConfigs = 10

// pushCursorKey is where the deliverer keeps its place in the log.
const pushCursorKey = "a2a:push-cursor"

func pushKey(taskID string) string { return "a2a:push:" + taskID }

// PushConfig is a TaskPushNotificationConfig.
type PushConfig struct {
	ID             string    `json:"id"`
	TaskID         string    `json:"taskId"`
	URL            string    `json:"url"`
	Token          string    `json:"token,omitempty"`
	Authentication *PushAuth `json:"authentication,omitempty"`
}

// PushAuth is how agentik authenticates to the receiver.
type PushAuth struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials"`
}

func (h *Handler) configs(ctx context.Context, taskID string) ([]PushConfig, error) {
	return loadConfigs(ctx, h.cfg.KV, taskID)
}

func loadConfigs(ctx context.Context, kv KV, taskID string) ([]PushConfig, error) {
	v, err := kv.Cursor(ctx, pushKey(taskID))
	if errors.Is(err, agent.ErrNotFound) {
		return []PushConfig{}, nil
	}
	if err != nil {
		return nil, err
	}
	var cs []PushConfig
	if err := json.Unmarshal([]byte(v), &cs); err != nil {
		return nil, fmt.Errorf("push configs of %s: %w", taskID, err)
	}
	return cs, nil
}

func (h *Handler) saveConfigs(ctx context.Context, taskID string, cs []PushConfig) error {
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	return h.cfg.KV.SetCursor(ctx, pushKey(taskID), string(b))
}

// addConfig checks and stores a config of a task the caller may see.
func (h *Handler) addConfig(ctx context.Context, c PushConfig) (PushConfig, error) {
	if h.cfg.KV == nil {
		return c, rpcErr(codePushUnsupported, "push notifications are not served by this agentik")
	}
	if err := h.cfg.PushAllow.checkURL(ctx, c.URL); err != nil { // pushnet.go
		return c, err
	}
	w, _, err := h.open(ctx, c.TaskID)
	if err != nil {
		return c, err
	}
	w.close()
	cs, err := h.configs(ctx, c.TaskID)
	if err != nil {
		return c, err
	}
	if c.ID == "" {
		c.ID = agent.NewID()
	}
	kept := cs[:0]
	for _, x := range cs {
		if x.ID != c.ID {
			kept = append(kept, x)
		}
	}
	if len(kept) >= maxPushConfigs {
		return c, rpcErr(codeInvalidParams, "task %s has %d push configs already, the most there may be; delete one first", c.TaskID, maxPushConfigs)
	}
	return c, h.saveConfigs(ctx, c.TaskID, append(kept, c))
}

// pushParams are the params of the four push config methods: a config
// to create, or the task (and config id) to read or delete.
type pushParams struct {
	PushConfig
	ID     string `json:"id"`
	TaskID string `json:"taskId"`
}

// Push config methods, by their A2A 1.0 names.
const (
	pushCreate = "CreateTaskPushNotificationConfig"
	pushGet    = "GetTaskPushNotificationConfig"
	pushList   = "ListTaskPushNotificationConfigs"
	pushDelete = "DeleteTaskPushNotificationConfig"
)

// errNoPush refuses a push method where push notifications are not served.
func errNoPush() error {
	return rpcErr(codePushUnsupported, "push notifications are not served by this agentik: follow the task with SendStreamingMessage or SubscribeToTask, or poll GetTask")
}

// push serves the four push config methods: a PushConfig (create, get),
// the list {"configs": […]} (list), or nil (delete).
func (h *Handler) push(ctx context.Context, method string, p pushParams) (any, error) {
	if h.cfg.KV == nil {
		return nil, errNoPush()
	}
	if method == pushCreate {
		c := p.PushConfig
		c.ID, c.TaskID = p.ID, p.TaskID
		return h.addConfig(ctx, c)
	}
	w, _, err := h.open(ctx, p.TaskID) // the caller may see the task
	if err != nil {
		return nil, err
	}
	w.close()
	cs, err := h.configs(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	switch method {
	case pushList:
		return map[string]any{"configs": cs}, nil
	case pushGet:
		for _, c := range cs {
			if c.ID == p.ID {
				return c, nil
			}
		}
	case pushDelete:
		for i, c := range cs {
			if c.ID == p.ID {
				return nil, h.saveConfigs(ctx, p.TaskID, append(cs[:i], cs[i+1:]...))
			}
		}
	}
	return nil, rpcErr(codeTaskNotFound, "task %s has no push config %q", p.TaskID, agent.Shorten(p.ID, 60))
}

// PushDeliverer delivers the tasks' push notifications.
type PushDeliverer struct {
	Handler *Handler
	// Client sends the pushes; nil: one that reaches only the addresses
	// AGENTIK_PUSH_ALLOW lets it (pushnet.go), TryTimeout a try.
	Client *http.Client
	Logger *slog.Logger
	// Backoff is the wait before retry n (1, 2, …); nil doubles from 1 s
	// to 1 min. After maxPushTries a delivery is given up (logged).
	Backoff func(n int) time.Duration
	// Workers bounds the deliveries in flight (default 16); PerHost
	// those of one user's tasks to one receiving host (host:port), and
	// PerOwner all those of one user's tasks (default 2 and 4), so that
	// one user's dead receivers hold a few workers, never all of them.
	Workers, PerHost, PerOwner int
	// TaskTimeout caps the time a task's deliveries may take, retries
	// and waiting for a worker included (AGENTIK_PUSH_TIMEOUT, default
	// 5 min); what is undelivered then is given up (logged).
	TaskTimeout time.Duration
	TryTimeout  time.Duration // one POST's (default 10 s)

	// A task that settles before the config its send carries is stored
	// finds no config here; it is kept in bare (bounded) so that the
	// send, once it stored the config, has it delivered (lateConfig).
	mu   sync.Mutex
	bare map[string]string // task id → the settling event's id
	ctx  context.Context

	lanes pushLanes
}

// maxBare bounds the tasks remembered as settled without a config.
const maxBare = 1024

// maxPushTries bounds the attempts of one delivery.
const maxPushTries = 8

// maxPending bounds the tasks waiting for delivery; past it the oldest
// is given up (logged).
const maxPending = 1000

// pushPendingKey keeps the tasks whose deliveries are not done yet
// (task id → the settling event's id): each task's own cursor, so that
// after a restart they are delivered again while the log's cursor has
// moved past them.
const pushPendingKey = "a2a:push-pending"

// Run delivers until ctx ends; the caller owns the goroutine, and Run
// waits for the deliveries it started.
func (d *PushDeliverer) Run(ctx context.Context) {
	if d.Handler.cfg.KV == nil { // push notifications are not served
		return
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.TryTimeout <= 0 {
		d.TryTimeout = 10 * time.Second
	}
	if d.Client == nil {
		d.Client = d.Handler.cfg.PushAllow.client(d.TryTimeout)
	}
	if d.Backoff == nil {
		d.Backoff = func(n int) time.Duration { return min(time.Second<<(n-1), time.Minute) }
	}
	if d.Workers <= 0 {
		d.Workers = 16
	}
	if d.PerHost <= 0 {
		d.PerHost = 2
	}
	if d.PerOwner <= 0 {
		d.PerOwner = 4
	}
	if d.TaskTimeout <= 0 {
		d.TaskTimeout = 5 * time.Minute
	}
	d.ctx = ctx
	d.lanes.init()
	defer d.lanes.wg.Wait()
	late := d.lateConfig
	d.Handler.late.Store(&late)
	defer d.Handler.late.Store(nil)
	resumed := false
	for ctx.Err() == nil {
		if !resumed {
			resumed = d.resume(ctx) == nil
		}
		if err := d.follow(ctx); err != nil && ctx.Err() == nil {
			d.Logger.Error("a2a_push_follow_failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// resume queues again the tasks a previous run left pending.
func (d *PushDeliverer) resume(ctx context.Context) error {
	pending, err := d.pending(ctx)
	if err != nil {
		d.Logger.Error("a2a_push_resume_failed", "err", err)
		return err
	}
	for id, eventID := range pending {
		d.schedule(ctx, id, eventID)
	}
	return nil
}

// Start places a first run's cursor at the log's head: what is sent from
// then on is delivered. Call it before the server serves (Run calls it
// too), so a task sent at once is not before the deliverer's start. It
// does nothing once the cursor is kept.
func (d *PushDeliverer) Start(ctx context.Context) error {
	h := d.Handler
	if h.cfg.KV == nil { // push notifications are not served
		return nil
	}
	if _, err := h.cfg.KV.Cursor(ctx, pushCursorKey); !errors.Is(err, agent.ErrNotFound) {
		return err
	}
	sub, err := h.cfg.Broker.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, -1, "")
	if err != nil {
		return err
	}
	head := sub.Head
	sub.Close()
	return h.cfg.KV.SetCursor(ctx, pushCursorKey, strconv.FormatInt(head, 10))
}

func (d *PushDeliverer) follow(ctx context.Context) error {
	h := d.Handler
	kv := h.cfg.KV
	if err := d.Start(ctx); err != nil {
		return err
	}
	v, err := kv.Cursor(ctx, pushCursorKey)
	if err != nil {
		return err
	}
	after, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("push cursor %q: %w", v, err)
	}
	sub, err := h.cfg.Broker.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll, Only: pushed}, after, "")
	if err != nil {
		var re *broker.ResyncError
		if errors.As(err, &re) && re.Reason == broker.ReasonPruned {
			d.Logger.Warn("a2a_push_skipped_pruned", "after", after, "start", re.Start)
			return kv.SetCursor(ctx, pushCursorKey, strconv.FormatInt(re.Start, 10))
		}
		return err
	}
	defer sub.Close()
	turns := map[string]int64{} // conversation → seq of its current turn's first event
	for {
		it, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		if it.CaughtUp || it.Event.Kind != agent.KindConversation {
			continue
		}
		e := it.Event
		switch e.Type {
		case agent.EventMessage:
			if startsTurn(e) {
				turns[e.ConversationID] = e.Seq
			}
		case agent.EventEnd, agent.EventApprovalRequest:
			seq, ok := turns[e.ConversationID]
			if !ok {
				if seq, err = d.turnOf(ctx, e.ConversationID, e.Seq); err != nil {
					d.Logger.Warn("a2a_push_turn_unknown", "conversation_id", e.ConversationID, "err", err)
					continue
				}
			}
			if e.Type == agent.EventEnd {
				delete(turns, e.ConversationID)
			}
			if err := d.settled(ctx, taskID(e.ConversationID, seq), e.ID); err != nil {
				return err
			}
			if e.Type == agent.EventEnd {
				if err := kv.SetCursor(ctx, pushCursorKey, strconv.FormatInt(e.Seq, 10)); err != nil {
					return err
				}
			}
		}
	}
}

// pushed is the deliverer's stream filter: the events follow acts on, by
// kind and type, so the broker does not queue (and wake it for) every
// streamed token.
func pushed(e *agent.Encoded) bool {
	if e.Kind != agent.KindConversation {
		return false
	}
	switch e.Type {
	case agent.EventMessage, agent.EventEnd, agent.EventApprovalRequest:
		return true
	}
	return false
}

// startsTurn reports whether e, a message event, holds a user's message
// (a turn's start), read without decoding the message (Encoded.MessageType).
func startsTurn(e *agent.Encoded) bool { return e.MessageType() == agent.MessageUser }

// turnOf finds the seq of the user message that started the turn an event
// at seq belongs to (a turn that started before the deliverer's cursor).
func (d *PushDeliverer) turnOf(ctx context.Context, convID string, seq int64) (int64, error) {
	var last int64
	for off := 0; ; off += agent.MaxPageSize {
		page, err := d.Handler.cfg.Conversations.Messages(ctx, agent.MessageQuery{ConversationID: convID, Offset: off, Limit: agent.MaxPageSize})
		if err != nil {
			return 0, err
		}
		for _, m := range page {
			if m.Seq > seq {
				break
			}
			if m.Type == agent.MessageUser {
				last = m.Seq
			}
		}
		if len(page) < agent.MaxPageSize {
			break
		}
	}
	if last == 0 {
		return 0, fmt.Errorf("no user message before seq %d", seq)
	}
	return last, nil
}

// settled records the task as pending and queues its deliveries, if it
// has configs.
func (d *PushDeliverer) settled(ctx context.Context, id, eventID string) error {
	d.mu.Lock()
	cs, err := loadConfigs(ctx, d.Handler.cfg.KV, id)
	if err == nil && len(cs) == 0 {
		if d.bare == nil || len(d.bare) >= maxBare {
			d.bare = map[string]string{}
		}
		d.bare[id] = eventID
	}
	d.mu.Unlock()
	if err != nil || len(cs) == 0 {
		return err
	}
	return d.enqueue(ctx, id, eventID)
}

// lateConfig is told that a send stored the push config of task id after
// starting it: if the deliverer found the task settled with no config,
// the task is delivered now. Configs are loaded under d.mu, so a task is
// either delivered by settled or remembered in bare, never neither.
func (d *PushDeliverer) lateConfig(id string) {
	d.mu.Lock()
	eventID, ok := d.bare[id]
	delete(d.bare, id)
	d.mu.Unlock()
	if !ok {
		return
	}
	if err := d.enqueue(d.ctx, id, eventID); err != nil && d.ctx.Err() == nil {
		d.Logger.Warn("a2a_push_late_failed", "task_id", id, "err", err)
	}
}

// pending reads the tasks whose deliveries are not done.
func (d *PushDeliverer) pending(ctx context.Context) (map[string]string, error) {
	v, err := d.Handler.cfg.KV.Cursor(ctx, pushPendingKey)
	if errors.Is(err, agent.ErrNotFound) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("pending pushes: %w", err)
	}
	return m, nil
}

// setPending records task id as pending with the settling event eventID,
// or (done) removes it, unless it settled again since (another event).
func (d *PushDeliverer) setPending(ctx context.Context, id, eventID string, done bool) error {
	d.lanes.pendMu.Lock()
	defer d.lanes.pendMu.Unlock()
	m, err := d.pending(ctx)
	if err != nil {
		return err
	}
	if done {
		if m[id] != eventID {
			return nil
		}
		delete(m, id)
	} else {
		for len(m) >= maxPending {
			for k := range m {
				d.Logger.Warn("a2a_push_given_up", "task_id", k, "reason", "too many tasks pending")
				delete(m, k)
				break
			}
		}
		m[id] = eventID
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return d.Handler.cfg.KV.SetCursor(ctx, pushPendingKey, string(b))
}

// enqueue records task id as pending, then queues its deliveries.
func (d *PushDeliverer) enqueue(ctx context.Context, id, eventID string) error {
	if err := d.setPending(ctx, id, eventID, false); err != nil {
		return err
	}
	d.schedule(ctx, id, eventID)
	return nil
}

// schedule queues one delivery per config of task id; when the last is
// done (delivered, refused, given up) the task is no longer pending.
func (d *PushDeliverer) schedule(ctx context.Context, id, eventID string) {
	done := func() {
		if err := d.setPending(context.WithoutCancel(d.ctx), id, eventID, true); err != nil {
			d.Logger.Warn("a2a_push_pending_failed", "task_id", id, "err", err)
		}
	}
	cs, err := loadConfigs(ctx, d.Handler.cfg.KV, id)
	convID, _, ok := parseTaskID(id)
	var c agent.Conversation
	if err == nil && ok {
		c, err = d.Handler.cfg.Conversations.Get(ctx, convID)
	}
	if err != nil || !ok || len(cs) == 0 {
		done() // deleted meanwhile, or no configs left
		return
	}
	t := &pushTask{id: id, eventID: eventID, left: len(cs), deadline: time.Now().Add(d.TaskTimeout), done: done}
	for _, pc := range cs {
		host := pc.URL
		if u, err := url.Parse(pc.URL); err == nil {
			host = strings.ToLower(u.Host)
		}
		// The host's lane is the owner's: another member's dead URLs on a
		// host they share (a webhook relay) hold up nobody else's.
		d.lanes.add(d, &pushJob{task: t, c: pc, host: c.Owner + " " + host, owner: c.Owner})
	}
}

// pushTask is one task's deliveries under way.
type pushTask struct {
	id, eventID string
	deadline    time.Time
	mu          sync.Mutex
	left        int
	done        func()
}

// pushJob is one delivery: a task to one config.
type pushJob struct {
	task        *pushTask
	c           PushConfig
	host, owner string
}

// pushLanes is the queue of deliveries and the workers in flight, by
// host and by owner.
type pushLanes struct {
	mu              sync.Mutex
	queue           []*pushJob
	busy            int
	byHost, byOwner map[string]int
	wg              sync.WaitGroup
	pendMu          sync.Mutex // the pending tasks' record
}

func (l *pushLanes) init() {
	l.byHost, l.byOwner = map[string]int{}, map[string]int{}
}

// add queues j and starts what may start.
func (l *pushLanes) add(d *PushDeliverer, j *pushJob) {
	l.mu.Lock()
	l.queue = append(l.queue, j)
	l.dispatch(d)
	l.mu.Unlock()
}

// dispatch starts, in queue order, every job whose host and owner have a
// worker free, while the pool has one; l.mu is held.
func (l *pushLanes) dispatch(d *PushDeliverer) {
	if d.ctx.Err() != nil {
		return // stopping: what is queued stays pending for the next run
	}
	kept := l.queue[:0]
	for _, j := range l.queue {
		if l.busy >= d.Workers || l.byHost[j.host] >= d.PerHost || l.byOwner[j.owner] >= d.PerOwner {
			kept = append(kept, j)
			continue
		}
		l.busy++
		l.byHost[j.host]++
		l.byOwner[j.owner]++
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			d.run(j)
			l.mu.Lock()
			l.busy--
			if l.byHost[j.host]--; l.byHost[j.host] == 0 {
				delete(l.byHost, j.host)
			}
			if l.byOwner[j.owner]--; l.byOwner[j.owner] == 0 {
				delete(l.byOwner, j.owner)
			}
			l.dispatch(d)
			l.mu.Unlock()
		}()
	}
	clear(l.queue[len(kept):])
	l.queue = kept
}

// run delivers one job within its task's time cap, then counts it done.
func (d *PushDeliverer) run(j *pushJob) {
	t := j.task
	defer func() {
		if d.ctx.Err() != nil {
			return // stopped, not done: the task stays pending for the next run
		}
		t.mu.Lock()
		t.left--
		last := t.left == 0
		t.mu.Unlock()
		if last {
			t.done()
		}
	}()
	ctx, cancel := context.WithDeadline(d.ctx, t.deadline)
	defer cancel()
	if ctx.Err() != nil {
		if d.ctx.Err() == nil {
			d.Logger.Warn("a2a_push_given_up", "task_id", t.id, "tries", 0, "reason", "the task's deliveries waited for a worker longer than their cap (AGENTIK_PUSH_TIMEOUT)")
		}
		return
	}
	body, err := d.body(ctx, t.id)
	if err != nil {
		if ctx.Err() == nil && d.ctx.Err() == nil {
			d.Logger.Warn("a2a_push_task_unreadable", "task_id", t.id, "err", err)
		}
		return
	}
	d.deliver(ctx, j.c, t.eventID+"-"+j.c.ID, body)
}

// body is the push of task id: the task as it stands.
func (d *PushDeliverer) body(ctx context.Context, id string) ([]byte, error) {
	w, _, err := d.Handler.open(ctx, id)
	if err != nil {
		return nil, err // deleted meanwhile
	}
	t := w.v.task(1)
	w.close()
	return json.Marshal(StreamResponse{Task: &t})
}

// deliver POSTs body to one receiver, retrying a few times, until ctx's
// deadline (the task's cap).
func (d *PushDeliverer) deliver(ctx context.Context, c PushConfig, id string, body []byte) {
	for n := 1; n <= maxPushTries; n++ {
		status, err := d.attempt(ctx, c, id, body)
		if err == nil && status/100 == 2 {
			return
		}
		if err == nil && status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
			d.Logger.Warn("a2a_push_refused", "task_id", c.TaskID, "status", status)
			return
		}
		if errors.Is(err, errPushAddr) {
			d.Logger.Warn("a2a_push_refused", "task_id", c.TaskID, "err", err)
			return
		}
		select {
		case <-ctx.Done():
			if d.ctx.Err() == nil {
				d.Logger.Warn("a2a_push_given_up", "task_id", c.TaskID, "tries", n, "reason", "the task's deliveries took longer than their cap (AGENTIK_PUSH_TIMEOUT)")
			}
			return
		case <-time.After(d.Backoff(n)):
		}
	}
	d.Logger.Warn("a2a_push_given_up", "task_id", c.TaskID, "tries", maxPushTries)
}

func (d *PushDeliverer) attempt(ctx context.Context, c PushConfig, id string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	ts := time.Now().Unix()
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	key, err := d.Handler.pushKey(ctx) // pushkey.go
	if err != nil {
		return 0, err
	}
	req.Header.Set("webhook-signature", key.sign(id, ts, body))
	if c.Token != "" {
		req.Header.Set("X-A2A-Notification-Token", c.Token)
	}
	if a := c.Authentication; a != nil && a.Scheme != "" && a.Credentials != "" {
		req.Header.Set("Authorization", a.Scheme+" "+a.Credentials)
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
