package agent

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the temp conversations' bounds.
const (
	TempIdleTimeout  = 30 * time.Minute // idle temp conversations are dropped after this
	TempSweepEvery   = time.Minute      // how often idle temp conversations are looked for
	DefaultTempCount = 1000             // temp conversations held at once
	DefaultTempBytes = 256 << 20        // bytes of content held by all temp conversations
	// DefaultTempApprovalWait bounds how long a temp conversation's tool
	// call waits for approval when Config.ApprovalTimeout is 0: a
	// stateless API request must not wait forever for a decision.
	DefaultTempApprovalWait = 10 * time.Minute
)

// TempConfig bounds the temp conversations. Zero values take the defaults.
type TempConfig struct {
	Idle     time.Duration // dropped after this long without a change
	MaxCount int           // at most this many at once
	MaxBytes int64         // at most this many bytes of messages and memory
	// SweepEvery is how often the owner of the sweep (see MemStore.SweepEvery) looks for idle ones.
	SweepEvery time.Duration
	// ApprovalWait bounds a temp conversation's wait for an approval when
	// Config.ApprovalTimeout is 0 (which, when set, bounds every
	// conversation's); the call is then denied as a timed-out one is.
	ApprovalWait time.Duration
}

// MemStore keeps temp conversations: the Store of conversations that live
// only in memory and are never written to the database. Their events go
// straight to the publisher with seq 0, and their messages have seq 0. It is
// bounded in count and bytes; Sweep drops idle ones.
type MemStore struct {
	cfg TempConfig
	pub Publisher
	now Clock

	mu    sync.Mutex
	convs map[string]*memConversation
	bytes int64 // of all convs

	version atomic.Uint64 // see Version
}

type memConversation struct {
	conv     Conversation
	messages []Message
	memory   []ModelMessage
	stale    bool // Record.StaleMemory
	queue    []QueuedSend
	pending  []PendingCall
	resolved map[string]bool // call ids of pending whose result is written
	elicits  []Elicitation   // of the last stored round (elicit.go)
	bytes    int64
}

var (
	_ Store     = (*MemStore)(nil)
	_ Versioned = (*MemStore)(nil)
)

// Version implements Versioned: it moves with every applied Append.
func (s *MemStore) Version() uint64 { return s.version.Load() }

// NewMemStore makes an empty MemStore that publishes to pub (may be nil).
func NewMemStore(cfg TempConfig, pub Publisher, now Clock) *MemStore {
	if cfg.Idle <= 0 {
		cfg.Idle = TempIdleTimeout
	}
	if cfg.MaxCount <= 0 {
		cfg.MaxCount = DefaultTempCount
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultTempBytes
	}
	if now == nil {
		now = time.Now
	}
	return &MemStore{cfg: cfg, pub: pub, now: now, convs: map[string]*memConversation{}}
}

// Has reports whether id is a conversation of this store.
func (s *MemStore) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.convs[id] != nil
}

// Append applies records in order and publishes their events. A batch
// that would break a bound or reuse a client_id applies nothing.
func (s *MemStore) Append(ctx context.Context, recs ...*Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.check(recs); err != nil {
		s.mu.Unlock()
		return err
	}
	evs := make([]AllEvent, 0, len(recs))
	for _, rec := range recs {
		owner := s.ownerOf(rec) // before apply: a delete forgets it
		s.apply(rec)
		if rec.Quiet {
			continue
		}
		ev := rec.Event
		ev.Owner = owner
		evs = append(evs, ev)
	}
	s.version.Add(1)
	s.mu.Unlock()
	if s.pub != nil {
		s.pub.Publish(evs...)
	}
	return nil
}

// check refuses a batch that breaks a bound or a rule; s.mu is held.
func (s *MemStore) check(recs []*Record) error {
	count, bytes := len(s.convs), s.bytes
	for _, rec := range recs {
		ev := rec.Event
		if ev.Agent != nil && ev.Agent.Type == AgentCreated && rec.Conversation != nil {
			count++
		}
		bytes += recordBytes(rec)
		if rec.AutoTitle {
			if c := s.convs[ev.ConversationID]; c != nil && c.conv.UserTitled {
				return ErrUserTitled
			}
		}
		if c := s.convs[ev.ConversationID]; rec.Turn == TurnStart && c != nil && c.conv.Running {
			return ErrTurnRunning(ev.ConversationID)
		}
		if err := s.checkQueue(rec); err != nil {
			return err
		}
		if err := s.checkApproval(rec); err != nil {
			return err
		}
		if err := s.checkElicit(rec); err != nil {
			return err
		}
		if m := ev.Event; m != nil && m.Type == EventMessage && m.Message.Type == MessageUser && m.Message.ClientID != "" {
			if c := s.convs[ev.ConversationID]; c != nil {
				for _, old := range c.messages {
					if old.Type == MessageUser && old.ClientID == m.Message.ClientID {
						return Errorf(CodeBadRequest, "client_id %q was already used in conversation %s", m.Message.ClientID, ev.ConversationID)
					}
				}
			}
		}
	}
	if count > s.cfg.MaxCount && count > len(s.convs) {
		return Errorf(CodeUnavailable, "%d temp conversations are open, the most this server keeps; delete one or wait for idle ones to expire", len(s.convs))
	}
	if bytes > s.cfg.MaxBytes && bytes > s.bytes {
		return Errorf(CodeUnavailable, "temp conversations hold %d bytes, and this would pass the %d this server keeps; delete some or wait for idle ones to expire", s.bytes, s.cfg.MaxBytes)
	}
	return nil
}

// recordBytes is what a record adds to memory, roughly: its text and images.
func recordBytes(rec *Record) int64 {
	var n int64
	if e := rec.Event.Event; e != nil && e.Type == EventMessage {
		m := e.Message
		n += int64(len(m.Reasoning) + len(m.Arguments) + len(m.Result)) // not Error: a turn can always end
		for _, c := range m.Content {
			n += int64(len(c.Body) + len(c.Data))
		}
	}
	for _, mm := range rec.Memory {
		n += int64(len(mm.Reasoning))
		for _, c := range mm.Content {
			n += int64(len(c.Body) + len(c.Data))
		}
		for _, tc := range mm.ToolCalls {
			n += int64(len(tc.Arguments))
		}
	}
	return n
}

// apply applies one record; s.mu is held.
func (s *MemStore) apply(rec *Record) {
	ev := rec.Event
	c := s.convs[ev.ConversationID]
	switch {
	case ev.Agent != nil && ev.Agent.Type == AgentCreated && rec.Conversation != nil:
		c = &memConversation{conv: *rec.Conversation}
		s.convs[ev.ConversationID] = c
	case ev.Agent != nil && ev.Agent.Type == AgentDeleted:
		if c != nil {
			s.bytes -= c.bytes
			delete(s.convs, ev.ConversationID)
		}
		return
	case ev.Agent != nil && ev.Agent.Type == AgentRenamed && c != nil:
		c.conv.Title = ev.Agent.Title
		c.conv.UserTitled = c.conv.UserTitled || !rec.AutoTitle
		c.conv.UpdatedAt = ev.Date
	case ev.Agent != nil && ev.Agent.Type == AgentUpdated && c != nil:
		s := ev.Agent.settings()
		s.apply(&c.conv)
		if !s.Filing() {
			c.conv.UpdatedAt = ev.Date
		}
	}
	if c == nil {
		return
	}
	if ev.Event != nil && ev.Event.Type == EventMessage {
		c.messages = append(c.messages, *ev.Event.Message)
		c.conv.MessageCount++
		c.conv.UpdatedAt = ev.Date
	}
	if rec.ReplaceMemory {
		c.memory, c.stale = nil, false
	}
	c.memory = append(c.memory, rec.Memory...)
	c.stale = c.stale || rec.StaleMemory
	if rec.Context != nil {
		size := *rec.Context
		c.conv.Context = &size
	}
	c.applyQueue(rec)
	c.applyApproval(rec)
	c.applyElicit(rec)
	n := recordBytes(rec)
	c.bytes += n
	s.bytes += n
	switch rec.Turn {
	case TurnStart:
		c.conv.Running = true
	case TurnEnd:
		c.conv.Running = false
	}
}

// Conversation returns one conversation, or ErrNotFound.
func (s *MemStore) Conversation(_ context.Context, id string) (Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.convs[id]; c != nil {
		return c.conv, nil
	}
	return Conversation{}, Errorf(CodeNotFound, "conversation %s not found", id)
}

// Conversations returns a page, most recently updated first, and the total.
func (s *MemStore) Conversations(_ context.Context, offset, limit int) ([]Conversation, int, error) {
	s.mu.Lock()
	all := make([]Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		all = append(all, c.conv)
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].UpdatedAt.After(all[j].UpdatedAt) })
	out := []Conversation{}
	if offset < len(all) {
		out = append(out, all[offset:min(len(all), offset+limit)]...)
	}
	return out, len(all), nil
}

// Messages returns a page of history. Temp messages have seq 0: an After
// above 0 is past all of them.
func (s *MemStore) Messages(_ context.Context, q MessageQuery) ([]Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[q.ConversationID]
	if c == nil {
		return nil, Errorf(CodeNotFound, "conversation %s not found", q.ConversationID)
	}
	var ms []Message
	for _, m := range c.messages {
		if q.After == 0 || m.Seq > q.After {
			ms = append(ms, m)
		}
	}
	out := []Message{}
	if q.Offset < len(ms) {
		out = append(out, ms[q.Offset:min(len(ms), q.Offset+q.Limit)]...)
	}
	return out, nil
}

// MessageByClientID returns the user message sent with clientID, or ErrNotFound.
func (s *MemStore) MessageByClientID(_ context.Context, conversationID, clientID string) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.convs[conversationID]; c != nil {
		for _, m := range c.messages {
			if m.Type == MessageUser && m.ClientID == clientID {
				return m, nil
			}
		}
	}
	return Message{}, Errorf(CodeNotFound, "no message with client_id %q in conversation %s", clientID, conversationID)
}

// Memory returns a conversation's working memory in order.
func (s *MemStore) Memory(_ context.Context, conversationID string) ([]ModelMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.convs[conversationID]; c != nil {
		if c.stale {
			return nil, fmt.Errorf("memory of %s: %w", conversationID, ErrStaleMemory)
		}
		return append([]ModelMessage(nil), c.memory...), nil
	}
	return nil, Errorf(CodeNotFound, "conversation %s not found", conversationID)
}

// Sweep deletes the temp conversations idle for longer than the idle
// timeout (and not running), publishing a deleted event for each.
func (s *MemStore) Sweep(ctx context.Context) error {
	s.mu.Lock()
	var idle []string
	now := s.now()
	for id, c := range s.convs {
		if !c.conv.Running && now.Sub(c.conv.UpdatedAt) > s.cfg.Idle {
			idle = append(idle, id)
		}
	}
	s.mu.Unlock()
	for _, id := range idle {
		ev := AllEvent{Kind: KindAgent, ID: NewID(), Date: now, ConversationID: id, Agent: &AgentEvent{Type: AgentDeleted, ConversationID: id}}
		if err := s.Append(ctx, &Record{Event: ev}); err != nil {
			return fmt.Errorf("sweep temp conversations: %w", err)
		}
	}
	return nil
}

// SweepEvery runs Sweep every interval until ctx ends. Its caller owns the
// goroutine it runs in.
func (s *MemStore) SweepEvery(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = TempSweepEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.Sweep(ctx)
		}
	}
}
