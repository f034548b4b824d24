// Package broker fans committed events out to live subscribers and lets a
// subscriber resume from a cursor: it replays stored events after the
// cursor, then goes live, with no gap and no duplicate at the seam.
//
// Ordering: the store publishes each committed batch in seq order from its
// single writer, so every subscriber sees stored events in seq order. A
// subscriber registers before it reads the store, so an event committed
// while it replays is either in its replay or in its queue (or both, and
// then deduplicated by seq).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentik/agentik/internal/agent"
)

// QueueLimit is how many events a subscriber may have waiting. A subscriber
// that falls this far behind is dropped with a resync carrying its cursor;
// resubscribing from it loses nothing. Memory is used only while events
// wait, so idle subscribers cost almost nothing.
const QueueLimit = 4096

// replayPage is how many stored events a subscriber reads per query.
const replayPage = 1000

// Resync reasons.
const (
	ReasonSlowConsumer  = "slow_consumer"
	ReasonEpochMismatch = "epoch_mismatch"
	ReasonPruned        = "pruned"
	ReasonCursorAhead   = "cursor_ahead"
	ReasonDeleted       = "deleted"
)

// ResyncError ends a subscription that cannot continue. After is the last
// seq the subscriber received; for slow_consumer resubscribing with it loses
// nothing, for the other reasons the client reloads history first. For
// pruned, Start says where the retained log starts: subscribing with
// after = Start replays everything still kept.
type ResyncError struct {
	Reason string
	After  int64
	Start  int64
}

func (e *ResyncError) Error() string {
	return fmt.Sprintf("resync after %d: %s", e.After, e.Reason)
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("subscription closed")

// Stream kinds.
const (
	StreamAll          = "all"
	StreamAgent        = "agent"
	StreamConversation = "conversation"
	// StreamInbox is a user's inbox (agent/inbox.go): the approval and
	// elicitation events of their own conversations (requests create
	// items, answers resolve them) and the waiting agent events (the
	// calls and requests that still wait, however the others ended).
	StreamInbox = "inbox"
)

// Stream selects the events of a subscription.
type Stream struct {
	Kind           string
	ConversationID string // StreamConversation
	// Owner narrows the stream to that user's conversations ("" all of
	// them); Subscribe sets it from the caller's principal (agent.Scope).
	Owner string
	// Projects are the projects whose conversations Owner also sees (the
	// project rule, agent/access.go) as the subscription starts: its
	// replay reads their events too. Live, each event is judged by reach
	// as it comes (a chat moved out, a member removed: no more events).
	Projects []string
	reach    Reach
	// Only, when set, narrows the stream to the events it accepts, judged
	// from the stored bytes' kind and type (never by decoding): a watcher
	// in the server that acts on a few types (turn metrics, A2A push) is
	// then not queued, nor woken, for every streamed token. Replays skip
	// what it rejects too.
	Only func(*agent.Encoded) bool
}

// Match reports whether ev belongs to the stream.
func (s Stream) Match(ev *agent.Encoded) bool {
	if s.Owner != "" && ev.Owner != s.Owner && (ev.ConversationID != "" || ev.Owner != "") &&
		(s.reach == nil || !s.reach.Sees(s.Owner, ev.ConversationID)) {
		return false // another user's conversation, in no project of Owner's (an event of none, a tool server's, is everyone's)
	}
	if s.Only != nil && !s.Only(ev) {
		return false
	}
	switch s.Kind {
	case StreamAll:
		return true
	case StreamAgent:
		return ev.Kind == agent.KindAgent
	case StreamConversation:
		return ev.Kind == agent.KindConversation && ev.ConversationID == s.ConversationID ||
			ev.Kind == agent.KindAgent && ev.ConversationID == s.ConversationID && ev.Type == agent.AgentDeleted
	case StreamInbox:
		return true // narrowed by Only (SubscribeReady)
	}
	return false
}

// inboxEvent reports whether ev belongs to an inbox stream.
func inboxEvent(ev *agent.Encoded) bool {
	if ev.Kind == agent.KindAgent {
		return ev.Type == agent.AgentWaiting
	}
	switch ev.Type {
	case agent.EventApprovalRequest, agent.EventApproval, agent.EventElicitationRequest, agent.EventElicitation:
		return ev.Kind == agent.KindConversation
	}
	return false
}

func (s Stream) query(after int64) agent.EventQuery {
	q := agent.EventQuery{After: after, Limit: replayPage, Owner: s.Owner, Projects: s.Projects}
	switch s.Kind {
	case StreamAgent:
		q.AgentOnly = true
	case StreamConversation:
		q.ConversationID = s.ConversationID
	}
	return q
}

// Source is the stored side of the event log.
type Source interface {
	// EncodedEvents returns stored events as their stored bytes.
	EncodedEvents(ctx context.Context, q agent.EventQuery) ([]agent.Encoded, error)
	Bounds(ctx context.Context) (pruned, head int64, err error)
	// ConversationPruned is the seq through which that conversation's
	// events may have been pruned (0: none were).
	ConversationPruned(ctx context.Context, id string) (int64, error)
	Epoch() string
}

// Reach is the project rule (agent/access.go) as the broker asks it of
// every live event of a conversation in a project, from memory;
// agent.ProjectIndex implements it.
type Reach interface {
	// Sees reports whether user sees conversation id through a project.
	Sees(user, conversationID string) bool
	// Members lists the users who see conversation id through its
	// project; nil when it is in none.
	Members(conversationID string) []string
	// Reached lists the projects whose conversations user sees.
	Reached(user string) []string
}

// Broker fans events out to subscribers. It implements agent.Publisher.
type Broker struct {
	src   Source
	log   *slog.Logger
	reach Reach // nil: no projects

	mu sync.RWMutex
	// all holds the StreamAll and StreamAgent subscriptions by their
	// Stream.Owner ("" for an admin's): an event is offered only to its
	// owner's and the admins' (and to everyone's when it has no owner),
	// so a team's hundreds of open sidebars cost an event nothing.
	all  map[string]map[*Sub]struct{}
	conv map[string]map[*Sub]struct{}

	recent recent // the latest stored events, for resumes

	dropMu sync.Mutex
	drops  map[string]int64 // subscriptions ended with a resync, by reason
}

// New makes a Broker that replays from src.
func New(src Source, log *slog.Logger) *Broker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Broker{src: src, log: log, all: map[string]map[*Sub]struct{}{}, conv: map[string]map[*Sub]struct{}{}, drops: map[string]int64{}}
}

var _ agent.Publisher = (*Broker)(nil)

// UseReach makes members of projects see their conversations' events (the
// project rule); called once, before the first subscription.
func (b *Broker) UseReach(r Reach) { b.reach = r }

// Publish encodes evs, events that are never stored (temp conversations,
// tool servers), and queues them as PublishEncoded does.
func (b *Broker) Publish(evs ...agent.AllEvent) {
	encs := make([]agent.Encoded, 0, len(evs))
	for _, ev := range evs {
		e, err := agent.Encode(ev)
		if err != nil {
			b.log.Error("event_encode_failed", "id", ev.ID, "err", err)
			continue
		}
		encs = append(encs, e)
	}
	b.PublishEncoded(encs)
}

// PublishEncoded queues evs, encoded once where they were committed, for
// every matching subscriber: they all share those bytes. It never blocks
// on a subscriber: one that is QueueLimit behind is dropped.
func (b *Broker) PublishEncoded(evs []agent.Encoded) {
	// Kept for resumes before they are delivered: a subscriber that
	// registers after the delivery below finds them in the ring; one that
	// registered before has them queued (a replay and its queue overlap
	// only by seqs, which Next skips).
	b.recent.add(evs)
	var slow []*Sub
	b.mu.RLock()
	for i := range evs {
		e := &evs[i]
		deliver := func(s *Sub) {
			if s.stream.Match(e) && !s.push(e) {
				slow = append(slow, s)
			}
		}
		if e.ConversationID == "" && e.Owner == "" { // no one's: everyone's (see Stream.Match)
			for _, m := range b.all {
				for s := range m {
					deliver(s)
				}
			}
		} else {
			for s := range b.all[""] {
				deliver(s)
			}
			if e.Owner != "" {
				for s := range b.all[e.Owner] {
					deliver(s)
				}
			}
			if b.reach != nil {
				// The members of the conversation's project (the project rule).
				for _, m := range b.reach.Members(e.ConversationID) {
					if m != e.Owner && m != "" {
						for s := range b.all[m] {
							deliver(s)
						}
					}
				}
			}
		}
		for s := range b.conv[e.ConversationID] {
			deliver(s)
		}
	}
	b.mu.RUnlock()
	for _, s := range slow {
		b.remove(s)
		b.dropped(ReasonSlowConsumer)
	}
}

// dropped counts a subscription ended (or refused) with a resync.
func (b *Broker) dropped(reason string) {
	b.dropMu.Lock()
	b.drops[reason]++
	b.dropMu.Unlock()
}

// Drops returns how many subscriptions were dropped or refused with a
// resync since the broker started, by reason (for metrics).
func (b *Broker) Drops() map[string]int64 {
	b.dropMu.Lock()
	defer b.dropMu.Unlock()
	m := make(map[string]int64, len(b.drops))
	for k, v := range b.drops {
		m[k] = v
	}
	return m
}

// replayPage is the next page of stored events of stream after cursor:
// from memory when the recent ring covers it, else from the database.
// stored reports whether the page was read from the database.
func (b *Broker) replayPage(ctx context.Context, stream Stream, cursor int64) (page []*agent.Encoded, stored bool, err error) {
	if page, ok := b.recent.after(cursor, stream, replayPage); ok {
		return page, false, nil
	}
	evs, err := b.src.EncodedEvents(ctx, stream.query(cursor))
	if err != nil {
		return nil, true, err
	}
	return pointers(evs), true, nil
}

// pointers is a page of stored events as the subscriptions hold them.
func pointers(evs []agent.Encoded) []*agent.Encoded {
	page := make([]*agent.Encoded, len(evs))
	for i := range evs {
		page[i] = &evs[i]
	}
	return page
}

// readAhead is a page of stored events being read while the previous one
// is delivered.
type readAhead struct {
	page []*agent.Encoded
	err  error
}

// Subscribers counts the live subscriptions.
func (b *Broker) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for _, m := range b.all {
		n += len(m)
	}
	for _, m := range b.conv {
		n += len(m)
	}
	return n
}

// Subscribe starts a subscription. With after < 0 it is live only (and
// never reports caught-up); otherwise it first replays stored events with
// seq > after. A non-empty epoch must match the store's. The returned Sub's
// Head is the highest seq committed when it started.
func (b *Broker) Subscribe(ctx context.Context, stream Stream, after int64, epoch string) (*Sub, error) {
	return b.SubscribeReady(ctx, stream, after, epoch, nil)
}

// SubscribeReady is Subscribe with the channel Ready returns: when ready
// is not nil, several subscriptions may share it (one WebSocket
// connection's, served by one goroutine), and a value on it says one of
// them may have something. Such a subscription is read with TryNext only
// (Next would take the others' wakeups). ready must have a buffer of one.
func (b *Broker) SubscribeReady(ctx context.Context, stream Stream, after int64, epoch string, ready chan struct{}) (*Sub, error) {
	return b.subscribe(ctx, stream, after, epoch, ready, nil)
}

// SubscribeWake is Subscribe with a function instead of a channel: wake
// is called whenever Ready would receive a value, on the goroutine that
// queued the event (the publisher's) or closed the subscription, so it
// must return at once. Ready is then nil; the subscription is read with
// TryNext only. A WebSocket connection starts its writer with it, and has
// no goroutine while nothing is to be written.
func (b *Broker) SubscribeWake(ctx context.Context, stream Stream, after int64, epoch string, wake func()) (*Sub, error) {
	return b.subscribe(ctx, stream, after, epoch, nil, wake)
}

func (b *Broker) subscribe(ctx context.Context, stream Stream, after int64, epoch string, ready chan struct{}, wake func()) (*Sub, error) {
	switch stream.Kind {
	case StreamAll, StreamAgent, StreamInbox:
	case StreamConversation:
		if stream.ConversationID == "" {
			return nil, agent.Errorf(agent.CodeBadRequest, "conversation_id is required for stream \"conversation\"")
		}
	default:
		return nil, agent.Errorf(agent.CodeBadRequest, "stream must be \"all\", \"agent\", \"conversation\" or \"inbox\", got %q", stream.Kind)
	}
	stream.Owner = agent.ListScope(ctx) // what the caller may see: the one rule (agent/access.go), narrowed by agent.OwnedBy
	stream.Projects, stream.reach = nil, nil
	if stream.Owner != "" && b.reach != nil && stream.Kind != StreamInbox {
		stream.Projects, stream.reach = b.reach.Reached(stream.Owner), b.reach
	}
	if stream.Kind == StreamInbox {
		stream.Owner = agent.InboxOwner(ctx) // an admin's inbox is their own (agent/inbox.go)
		stream.Only = inboxEvent             // live and replayed alike
	}
	if epoch != "" && b.src != nil && epoch != b.src.Epoch() {
		b.dropped(ReasonEpochMismatch)
		return nil, &ResyncError{Reason: ReasonEpochMismatch, After: after}
	}
	if ready == nil && wake == nil {
		ready = make(chan struct{}, 1)
	}
	s := &Sub{b: b, stream: stream, notify: ready, wakeFn: wake, cursor: after, replaying: after >= 0}
	b.add(s)
	if b.src != nil {
		pruned, head, err := b.src.Bounds(ctx)
		if err != nil {
			b.remove(s)
			return nil, fmt.Errorf("subscribe: %w", err)
		}
		s.Head = head
		if stream.Kind == StreamConversation && after >= 0 && after < pruned {
			// Judged by this conversation's own oldest event: pruning
			// others' events does not break its cursors.
			if pruned, err = b.src.ConversationPruned(ctx, stream.ConversationID); err != nil {
				b.remove(s)
				return nil, fmt.Errorf("subscribe: %w", err)
			}
		}
		switch {
		case after >= 0 && after < pruned:
			b.remove(s)
			b.dropped(ReasonPruned)
			return nil, &ResyncError{Reason: ReasonPruned, After: after, Start: pruned}
		case after > head:
			b.remove(s)
			b.dropped(ReasonCursorAhead)
			return nil, &ResyncError{Reason: ReasonCursorAhead, After: after}
		}
	}
	return s, nil
}

func (b *Broker) add(s *Sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx, key := b.all, s.stream.Owner
	if s.stream.Kind == StreamConversation {
		idx, key = b.conv, s.stream.ConversationID
	}
	m := idx[key]
	if m == nil {
		m = map[*Sub]struct{}{}
		idx[key] = m
	}
	m[s] = struct{}{}
}

func (b *Broker) remove(s *Sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx, key := b.all, s.stream.Owner
	if s.stream.Kind == StreamConversation {
		idx, key = b.conv, s.stream.ConversationID
	}
	m := idx[key]
	delete(m, s)
	if len(m) == 0 {
		delete(idx, key)
	}
}

// Item is what Next returns: an event, or the moment a replaying
// subscription has delivered everything stored and is live.
type Item struct {
	// Event is the event as the bytes it was stored (or published) as,
	// shared by every subscriber: read them, never modify them.
	Event    *agent.Encoded
	CaughtUp bool
	Seq      int64 // with CaughtUp: the cursor at that moment
}

// Sub is one subscription. Next must be called from one goroutine.
type Sub struct {
	// Head is the highest seq committed when the subscription started.
	Head int64

	b      *Broker
	stream Stream
	notify chan struct{}
	wakeFn func() // in place of notify (SubscribeWake)

	mu    sync.Mutex
	queue []*agent.Encoded
	// inline backs queue while it holds few events: a subscriber that
	// keeps up (one live event queued at a time) queues without an
	// allocation per delivery; a longer queue moves to the heap, and is
	// let go once emptied.
	inline [4]*agent.Encoded
	err    error // set when dropped or closed
	// stopAhead cancels the read-ahead in flight (nil when none is);
	// aheads counts those reads, which Close waits for: no query of a
	// closed subscription outlives it (nor, then, the store's Close).
	stopAhead context.CancelFunc
	aheads    sync.WaitGroup

	// owned by the goroutine calling Next
	cursor    int64
	replaying bool
	page      []*agent.Encoded
	ahead     chan readAhead // the next stored page, being read; nil when none is
}

// readAhead starts reading the stored page after cursor, unless the
// subscription has ended (the next TryNext then reports it).
func (s *Sub) readAhead(ctx context.Context, cursor int64) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	s.stopAhead = cancel
	s.aheads.Add(1) // under mu, before Close can set err and Wait
	s.mu.Unlock()
	ch := make(chan readAhead, 1)
	s.ahead = ch
	go func() {
		defer s.aheads.Done()
		defer cancel()
		evs, err := s.b.src.EncodedEvents(rctx, s.stream.query(cursor))
		ch <- readAhead{pointers(evs), err}
	}()
}

// Stream is what the subscription selects.
func (s *Sub) Stream() Stream { return s.stream }

// push queues e; it reports false when that dropped the subscriber.
func (s *Sub) push(e *agent.Encoded) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return true
	}
	if len(s.queue) >= QueueLimit {
		s.err = &ResyncError{Reason: ReasonSlowConsumer}
		s.queue = nil
		s.mu.Unlock()
		s.wake()
		return false
	}
	if s.queue == nil {
		s.queue = s.inline[:0]
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	s.wake()
	return true
}

func (s *Sub) wake() {
	if s.wakeFn != nil {
		s.wakeFn()
		return
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Close ends the subscription; a blocked Next returns ErrClosed. A page
// being read ahead is cancelled and waited for.
func (s *Sub) Close() {
	s.b.remove(s)
	s.mu.Lock()
	if s.err == nil {
		s.err = ErrClosed
	}
	s.queue = nil
	stop := s.stopAhead
	s.mu.Unlock()
	s.wake()
	if stop != nil {
		stop()
	}
	s.aheads.Wait()
}

// Next returns the next event, first from the store, then live. A dropped
// subscription returns a *ResyncError whose After is the cursor.
func (s *Sub) Next(ctx context.Context) (Item, error) {
	for {
		it, ok, err := s.TryNext(ctx)
		if err != nil || ok {
			return it, err
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Item{}, ctx.Err()
		}
	}
}

// TryNext is Next without waiting for a live event: ok is false when none
// is queued (then Ready says when one may be). While replaying it reads
// the store, so it may block on that. Like Next, it is called from one
// goroutine.
func (s *Sub) TryNext(ctx context.Context) (it Item, ok bool, err error) {
	for s.replaying {
		if len(s.page) > 0 {
			ev := s.page[0]
			s.page = s.page[1:]
			s.cursor = ev.Seq
			if s.stream.Only != nil && !s.stream.Only(ev) {
				continue // a stored page is read without the filter
			}
			return Item{Event: ev}, true, nil
		}
		if err := s.dropped(); err != nil {
			return Item{}, false, err
		}
		var (
			page   []*agent.Encoded
			stored bool
		)
		if s.ahead != nil {
			select {
			case r := <-s.ahead:
				s.ahead = nil
				page, stored, err = r.page, true, r.err
			case <-ctx.Done():
				return Item{}, false, ctx.Err()
			}
		} else {
			page, stored, err = s.b.replayPage(ctx, s.stream, s.cursor)
		}
		if err != nil {
			return Item{}, false, fmt.Errorf("replay: %w", err)
		}
		if len(page) == 0 {
			s.replaying = false
			return Item{CaughtUp: true, Seq: s.cursor}, true, nil
		}
		s.page = page
		if stored {
			// A long replay: read the next page while this one is
			// delivered (the database and the socket then use both
			// cores). It is the query the next call would make: a page
			// read earlier is as good, because every event committed
			// after it reaches this subscription's queue (registered
			// before any read), and the queue skips what was replayed.
			s.readAhead(ctx, page[len(page)-1].Seq)
		}
	}
	s.mu.Lock()
	for len(s.queue) > 0 {
		e := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = nil // let a grown backing array go (push starts again on inline)
		}
		if e.Seq != 0 && e.Seq <= s.cursor {
			continue // already replayed
		}
		s.mu.Unlock()
		if e.Seq != 0 {
			s.cursor = e.Seq
		}
		return Item{Event: e}, true, nil
	}
	err = s.err
	s.mu.Unlock()
	if err != nil {
		return Item{}, false, s.dropped()
	}
	return Item{}, false, nil
}

// Ready receives a value when an event may have been queued (or the
// subscription ended) since TryNext last found nothing: wait on it, then
// call TryNext again. A wakeup may find nothing; none is ever lost.
func (s *Sub) Ready() <-chan struct{} { return s.notify }

func (s *Sub) dropped() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r *ResyncError
	if errors.As(s.err, &r) {
		return &ResyncError{Reason: r.Reason, After: s.cursor}
	}
	return s.err
}
