// Package webhook delivers each ended turn to HTTP receivers as a
// Standard Webhooks "turn.ended" message, and each inbox item (agent's
// inbox.go: an approval or an elicitation that waits for a person) as
// "inbox.item_created" and "inbox.item_resolved", so an operator can page
// someone. A deliverer is a durable subscriber of the event log: it keeps
// its cursor in the database, so each is delivered at least once across
// restarts and receiver outages, with the event's id as the stable
// webhook-id (receivers deduplicate by it).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one delivery attempt (connect, send, answer).
	DefaultTimeout = 10 * time.Second
	// maxBackoff caps the wait between attempts.
	maxBackoff = 5 * time.Minute
)

// The webhook message types.
const (
	EventTurnEnded        = "turn.ended"
	EventInboxItemCreated = "inbox.item_created"
	// EventInboxItemResolved: answered (on any surface, or by the
	// approval timeout), or its turn ended without an answer (Resolution
	// "turn_ended": interrupted, failed).
	EventInboxItemResolved = "inbox.item_resolved"
)

// Cursors stores a deliverer's position in the event log (store.Store).
type Cursors interface {
	// Cursor returns the value under key, or agent.ErrNotFound.
	Cursor(ctx context.Context, key string) (string, error)
	SetCursor(ctx context.Context, key, value string) error
}

// Log is the event log as the deliverer reads it.
type Log interface {
	Subscribe(ctx context.Context, stream broker.Stream, after int64, epoch string) (*broker.Sub, error)
}

// Config configures one receiver's deliverer.
type Config struct {
	URL     string
	Secret  []byte // decoded from the whsec_ form (ParseSecret)
	Log     Log
	Cursors Cursors
	Head    func(ctx context.Context) (int64, error) // the log's highest seq: where a new receiver starts
	// Client sends the requests; nil: a client that follows no redirects.
	Client *http.Client
	// Timeout bounds one attempt; zero means DefaultTimeout.
	Timeout time.Duration
	// Backoff is the wait before retry attempt n (1, 2, …); nil doubles
	// from 1 s up to 5 min. Retries go on until the receiver accepts: an
	// ended turn is never skipped.
	Backoff func(attempt int) time.Duration
	Logger  *slog.Logger
	Now     func() time.Time
}

// CursorKey is where the deliverer to url keeps its cursor: each receiver
// has its own, so one that is down holds back no other.
func CursorKey(url string) string {
	h := sha256.Sum256([]byte(url))
	return "webhook:" + hex.EncodeToString(h[:8])
}

// ParseURLs splits a comma-separated list of http(s) URLs; a malformed one
// is an error that names it.
func ParseURLs(s string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q is not an http(s) URL", v)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseSecret decodes a Standard Webhooks secret: "whsec_" and the base64
// of 24 to 64 random bytes.
func ParseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), "whsec_")
	if !ok {
		return nil, errors.New(`must start with "whsec_" followed by base64 (e.g. whsec_$(openssl rand -base64 32))`)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) < 24 || len(b) > 64 {
		return nil, errors.New(`must be "whsec_" followed by the base64 of 24 to 64 bytes`)
	}
	return b, nil
}

// Sign is the Standard Webhooks signature header value:
// "v1," + base64(HMAC-SHA256(secret, id + "." + timestamp + "." + body)).
func Sign(secret []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Message is the JSON body of a delivery.
type Message struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      TurnEnded `json:"data"`
}

// TurnEnded describes an ended turn.
type TurnEnded struct {
	ConversationID string       `json:"conversation_id"`
	Outcome        string       `json:"outcome"` // ok, error, interrupted
	Usage          *agent.Usage `json:"usage,omitempty"`
	Text           string       `json:"text"` // the last answer's text
	Error          *agent.Error `json:"error,omitempty"`
	Seq            int64        `json:"seq"` // the end event's seq
}

// InboxMessage is the JSON body of an inbox delivery.
type InboxMessage struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      InboxItem `json:"data"`
}

// InboxItem describes an inbox item as it was created or resolved.
type InboxItem struct {
	ItemID         string `json:"item_id"` // agent.InboxID: answer it with POST /agentik/inbox/{item_id}
	Kind           string `json:"kind"`    // approval, elicitation
	ConversationID string `json:"conversation_id"`
	Owner          string `json:"owner"` // the user whose inbox holds it
	CallID         string `json:"call_id,omitempty"`
	RequestID      string `json:"request_id,omitempty"` // elicitation
	Name           string `json:"name,omitempty"`       // approval: the tool
	Server         string `json:"server,omitempty"`     // elicitation: the tool server asking
	Message        string `json:"message,omitempty"`    // elicitation: what it asks
	// Resolved only: the decision (approval), the action (elicitation),
	// or "turn_ended" for an item whose turn ended unanswered.
	Resolution string `json:"resolution,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Seq        int64  `json:"seq"` // the event's seq
}

// Run delivers ended turns to cfg.URL until ctx is done. The caller owns
// the goroutine.
func Run(ctx context.Context, cfg Config) {
	d := newDeliverer(cfg)
	for ctx.Err() == nil {
		if err := d.follow(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("webhook_follow_failed", "url", d.redacted, "err", err)
			d.sleep(ctx, time.Second)
		}
	}
}

type deliverer struct {
	cfg      Config
	log      *slog.Logger
	key      string
	redacted string
	client   *http.Client

	from, done int64            // cursor: replay after from; ends ≤ done are delivered
	open       map[string]*turn // turns in progress by conversation
}

type turn struct {
	first   int64
	text    string
	outcome string
	err     *agent.Error
	items   map[string]InboxItem // created, not resolved yet, by item id
}

func newDeliverer(cfg Config) *deliverer {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func(n int) time.Duration {
			return min(time.Second<<min(n-1, 20), maxBackoff)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	red := cfg.URL
	if u, err := url.Parse(cfg.URL); err == nil {
		u.RawQuery, u.User = "", nil // may hold tokens
		red = u.String()
	}
	return &deliverer{cfg: cfg, log: cfg.Logger, key: CursorKey(cfg.URL), redacted: red, client: client}
}

// load reads the stored cursor; a new receiver starts at the log's head.
func (d *deliverer) load(ctx context.Context) error {
	v, err := d.cfg.Cursors.Cursor(ctx, d.key)
	if errors.Is(err, agent.ErrNotFound) {
		head, err := d.cfg.Head(ctx)
		if err != nil {
			return err
		}
		d.from, d.done = head, head
		return d.save(ctx)
	}
	if err != nil {
		return err
	}
	a, b, _ := strings.Cut(v, ":")
	if d.from, err = strconv.ParseInt(a, 10, 64); err == nil {
		d.done, err = strconv.ParseInt(b, 10, 64)
	}
	if err != nil {
		return fmt.Errorf("webhook cursor %q: %w", v, err)
	}
	return nil
}

func (d *deliverer) save(ctx context.Context) error {
	return d.cfg.Cursors.SetCursor(context.WithoutCancel(ctx), d.key, strconv.FormatInt(d.from, 10)+":"+strconv.FormatInt(d.done, 10))
}

// follow reads the log from the stored cursor and delivers every turn
// that ends, until ctx is done or the subscription fails.
func (d *deliverer) follow(ctx context.Context) error {
	if err := d.load(ctx); err != nil {
		return err
	}
	d.open = map[string]*turn{}
	sub, err := d.cfg.Log.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll}, d.from, "")
	if err != nil {
		var r *broker.ResyncError
		if errors.As(err, &r) && r.Reason == broker.ReasonPruned {
			// Events this receiver never got were pruned: say so, go on from the head.
			d.log.Error("webhook_events_lost", "url", d.redacted, "after", d.from)
			head, herr := d.cfg.Head(ctx)
			if herr != nil {
				return herr
			}
			d.from, d.done = head, max(d.done, head)
			return d.save(ctx)
		}
		return err
	}
	defer sub.Close()
	for {
		it, err := sub.Next(ctx)
		if err != nil {
			return err // a slow-consumer drop resumes from the stored cursor
		}
		if it.CaughtUp || it.Event.Seq == 0 {
			continue
		}
		ev, err := it.Event.Decode()
		if err != nil {
			continue // not a stored event this version can read
		}
		if err := d.see(ctx, ev, it.Event.Owner); err != nil {
			return err
		}
	}
}

func (d *deliverer) see(ctx context.Context, ev agent.AllEvent, owner string) error {
	if a := ev.Agent; a != nil {
		if a.Type == agent.AgentDeleted {
			delete(d.open, a.ConversationID)
		}
		return nil
	}
	e := ev.Event
	if e == nil {
		return nil
	}
	t := d.open[ev.ConversationID]
	if t == nil {
		t = &turn{first: ev.Seq, outcome: "ok"}
		d.open[ev.ConversationID] = t
	}
	switch e.Type {
	case agent.EventMessage:
		if m := e.Message; m != nil && m.Type == agent.MessageAssistant {
			var b strings.Builder
			for _, c := range m.Content {
				if c.Type == agent.ContentText {
					b.WriteString(c.Body)
				}
			}
			t.text = b.String()
		}
	case agent.EventError:
		t.outcome, t.err = "error", &agent.Error{Code: e.Code, Message: e.Error}
	case agent.EventInterrupted:
		t.outcome = "interrupted"
	case agent.EventApprovalRequest, agent.EventElicitationRequest:
		it := InboxItem{Kind: agent.InboxApproval, ConversationID: ev.ConversationID, Owner: owner, CallID: e.CallID, Name: e.Name, Seq: ev.Seq}
		key := e.CallID
		if e.Type == agent.EventElicitationRequest {
			it.Kind, it.RequestID, it.Server, it.Message, it.Name, key = agent.ElicitKind(e.Mode), e.RequestID, e.Server, e.Ask, "", e.RequestID
		}
		it.ItemID = agent.InboxID(it.Kind, ev.ConversationID, key)
		if t.items == nil {
			t.items = map[string]InboxItem{}
		}
		t.items[it.ItemID] = it
		return d.deliverItem(ctx, ev, EventInboxItemCreated, it)
	case agent.EventApproval, agent.EventElicitation:
		id := agent.InboxID(agent.InboxApproval, ev.ConversationID, e.CallID)
		if e.Type == agent.EventElicitation {
			id = agent.InboxID(agent.InboxElicitation, ev.ConversationID, e.RequestID)
		}
		it, ok := t.items[id]
		if !ok && e.Type == agent.EventElicitation {
			id = agent.InboxID(agent.InboxCredential, ev.ConversationID, e.RequestID)
			it, ok = t.items[id]
		}
		if !ok {
			return nil // created before this receiver's first cursor
		}
		delete(t.items, id)
		it.Resolution, it.Reason, it.Seq = e.Decision, e.Reason, ev.Seq
		if e.Type == agent.EventElicitation {
			it.Resolution = e.Action
		}
		return d.deliverItem(ctx, ev, EventInboxItemResolved, it)
	case agent.EventEnd:
		delete(d.open, ev.ConversationID)
		if ev.Seq > d.done {
			// Items the turn ended without an answer are resolved by its end.
			for _, id := range slices.Sorted(maps.Keys(t.items)) {
				it := t.items[id]
				it.Resolution, it.Seq = "turn_ended", ev.Seq
				msg := InboxMessage{Type: EventInboxItemResolved, Timestamp: ev.Date.UTC(), Data: it}
				if err := d.deliver(ctx, ev.ID+"."+id, ev.ConversationID, msg); err != nil {
					return err
				}
			}
			msg := Message{Type: EventTurnEnded, Timestamp: ev.Date.UTC(), Data: TurnEnded{
				ConversationID: ev.ConversationID, Outcome: t.outcome, Usage: e.Usage, Text: t.text, Error: t.err, Seq: ev.Seq}}
			if err := d.deliver(ctx, ev.ID, ev.ConversationID, msg); err != nil {
				return err
			}
			d.done = ev.Seq
		}
		d.from = ev.Seq
		for _, o := range d.open {
			d.from = min(d.from, o.first-1)
		}
		return d.save(ctx)
	}
	return nil
}

// deliverItem delivers an inbox message of event ev (once: not again
// after a restart that replays it) and stores the cursor.
func (d *deliverer) deliverItem(ctx context.Context, ev agent.AllEvent, typ string, it InboxItem) error {
	if ev.Seq <= d.done {
		return nil
	}
	if err := d.deliver(ctx, ev.ID, ev.ConversationID, InboxMessage{Type: typ, Timestamp: ev.Date.UTC(), Data: it}); err != nil {
		return err
	}
	d.done = ev.Seq
	return d.save(ctx)
}

// deliver POSTs msg until the receiver answers 2xx or ctx is done.
func (d *deliverer) deliver(ctx context.Context, id, conv string, msg any) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := d.attempt(ctx, id, body)
		if err == nil {
			d.log.Info("webhook_delivered", "url", d.redacted, "webhook_id", id, "conversation_id", conv, "attempts", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := d.cfg.Backoff(attempt)
		d.log.Warn("webhook_attempt_failed", "url", d.redacted, "webhook_id", id, "attempt", attempt, "retry_in", wait, "err", err)
		if !d.sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

func (d *deliverer) attempt(ctx context.Context, id string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := d.cfg.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentik-webhook")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(d.cfg.Secret, id, ts, body))
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}

// sleep waits d or until ctx is done; it reports whether it waited.
func (d *deliverer) sleep(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
