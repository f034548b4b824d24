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
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
	"github.com/agentik/agentik/internal/webhook"
)

// Push notifications: a task's configs are kept in the database's
// key-value table (KV) under pushKey(task); one deliverer (RunPush)
// follows the whole event log from a cursor kept there too, and when a
// task settles (it completes, fails, is canceled, or needs input) POSTs
// the task as it stands to each of its configs' URLs, signed as Standard
// Webhooks when a secret is set.

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
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, rpcErr(codeInvalidParams, "url must be an http(s) URL, got %q", agent.Shorten(c.URL, 100))
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

// PushConfig of the deliverer.
type PushDeliverer struct {
	Handler *Handler
	Secret  []byte       // Standard Webhooks secret; nil: unsigned
	Client  *http.Client // nil: one that follows no redirects, 10 s a try
	Logger  *slog.Logger
	// Backoff is the wait before retry n (1, 2, …); nil doubles from 1 s
	// to 1 min. After maxPushTries a delivery is given up (logged), so one
	// dead receiver never holds back the others.
	Backoff func(n int) time.Duration

	// A task that settles before the config its send carries is stored
	// finds no config here; it is kept in bare (bounded) so that the
	// send, once it stored the config, has it delivered (lateConfig).
	mu   sync.Mutex
	bare map[string]string // task id → the settling event's id
	ctx  context.Context
}

// maxBare bounds the tasks remembered as settled without a config.
const maxBare = 1024

// maxPushTries bounds the attempts of one delivery.
const maxPushTries = 8

// Run delivers until ctx ends; the caller owns the goroutine.
func (d *PushDeliverer) Run(ctx context.Context) {
	if d.Handler.cfg.KV == nil { // push notifications are not served
		return
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Client == nil {
		d.Client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if d.Backoff == nil {
		d.Backoff = func(n int) time.Duration { return min(time.Second<<(n-1), time.Minute) }
	}
	d.ctx = ctx
	late := d.lateConfig
	d.Handler.late.Store(&late)
	defer d.Handler.late.Store(nil)
	for ctx.Err() == nil {
		if err := d.follow(ctx); err != nil && ctx.Err() == nil {
			d.Logger.Error("a2a_push_follow_failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
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
		page, err := d.Handler.cfg.Runner.Messages(ctx, agent.MessageQuery{ConversationID: convID, Offset: off, Limit: agent.MaxPageSize})
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

// settled delivers the task to its configs, if it has any.
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
	return d.push(ctx, id, eventID, cs)
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
	go func() {
		cs, err := loadConfigs(d.ctx, d.Handler.cfg.KV, id)
		if err == nil && len(cs) > 0 {
			err = d.push(d.ctx, id, eventID, cs)
		}
		if err != nil && d.ctx.Err() == nil {
			d.Logger.Warn("a2a_push_late_failed", "task_id", id, "err", err)
		}
	}()
}

// push delivers task id, as it stands, to cs.
func (d *PushDeliverer) push(ctx context.Context, id, eventID string, cs []PushConfig) error {
	w, _, err := d.Handler.open(ctx, id)
	if err != nil {
		return nil // deleted meanwhile
	}
	t := w.v.task(1)
	w.close()
	body, err := json.Marshal(StreamResponse{Task: &t})
	if err != nil {
		return err
	}
	for _, c := range cs {
		d.deliver(ctx, c, eventID+"-"+c.ID, body)
	}
	return ctx.Err()
}

// deliver POSTs body to one receiver, retrying a few times.
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
		select {
		case <-ctx.Done():
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
	if d.Secret != nil {
		req.Header.Set("webhook-signature", webhook.Sign(d.Secret, id, ts, body))
	}
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
