package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/protocol"
)

// Stream kinds.
const (
	StreamAll          = "all"
	StreamAgent        = "agent"
	StreamConversation = "conversation"
	StreamInbox        = "inbox" // the caller's inbox: approval and elicitation events, and waiting
)

// Stream selects what a subscription receives.
type Stream struct {
	Kind           string // StreamAll, StreamAgent, StreamConversation or StreamInbox
	ConversationID string // StreamConversation
}

// Event is one event of a subscription: decoded, and the JSON the server
// sent, byte for byte.
type Event struct {
	agent.AllEvent
	JSON json.RawMessage
}

// ResyncError ends a subscription whose cursor the server cannot resume:
// the database changed (epoch_mismatch), the events were pruned, or the
// cursor is ahead of the log. The client reloads history and subscribes
// again.
type ResyncError struct {
	Reason string
	After  int64
}

func (e *ResyncError) Error() string {
	return fmt.Sprintf("client: cannot resume after seq %d: %s; reload history and subscribe again", e.After, e.Reason)
}

// Sub is a subscription that resumes by itself: after a disconnect, a
// server restart or a slow-consumer resync it subscribes again from the
// last seq it queued. Next must be called from one goroutine.
type Sub struct {
	c      *Client
	stream Stream
	notify chan struct{}

	mu       sync.Mutex
	queue    []Event
	last     int64  // highest seq queued; -1 before a live subscription's first reply
	epoch    string // of the database the cursor belongs to
	stale    bool   // resubscribe from last once the queue is drained
	err      error  // the subscription ended
	closed   bool
	serverID string // the server's sub id on conn
	conn     *conn
}

// Subscribe starts a subscription. With after ≥ 0 it first receives every
// stored event after that seq; with after < 0 it receives what happens
// from now on.
func (c *Client) Subscribe(ctx context.Context, stream Stream, after int64) (*Sub, error) {
	if after < 0 {
		after = -1
	}
	s := &Sub{c: c, stream: stream, notify: make(chan struct{}, 1), last: after}
	if err := s.subscribe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// subscribe asks the server for the subscription, from s.last.
func (s *Sub) subscribe(ctx context.Context) error {
	for {
		s.mu.Lock()
		cmd := protocol.Command{Op: protocol.OpSubscribe, Stream: s.stream.Kind, ConversationID: s.stream.ConversationID, Epoch: s.epoch}
		if s.last >= 0 {
			after := s.last
			cmd.After = &after
		}
		s.mu.Unlock()
		err := s.c.call(ctx, cmd, nil, s)
		if !errors.Is(err, ErrDisconnected) {
			return err
		}
	}
}

// bound records the server's reply to subscribe; c.mu is held.
func (s *Sub) bound(r protocol.SubscribeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverID, s.conn = r.Sub, s.c.cur
	if s.epoch == "" {
		s.epoch = r.Epoch
	}
	if s.last < 0 {
		s.last = r.Head
	}
	s.stale = false
}

// push queues an event; false means the queue overflowed and the
// subscription must be unbound (it resumes once drained).
func (s *Sub) push(ev Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale || s.closed || s.err != nil {
		return true
	}
	if ev.Seq != 0 && ev.Seq <= s.last {
		return true // seen before a reconnect
	}
	if len(s.queue) >= queueLimit {
		s.stale = true
		s.wake()
		return false
	}
	s.queue = append(s.queue, ev)
	if ev.Seq != 0 {
		s.last = ev.Seq
	}
	s.wake()
	return true
}

func (s *Sub) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// markStale makes the subscription resume on the next connection.
func (s *Sub) markStale() {
	s.mu.Lock()
	s.stale, s.serverID, s.conn = true, "", nil
	s.mu.Unlock()
	s.wake()
}

// resync handles the server ending the subscription.
func (s *Sub) resync(reason string, after int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverID, s.conn = "", nil
	switch reason {
	case "slow_consumer", protocol.ResyncReasonError:
		s.stale = true // resubscribing from s.last loses nothing
	default:
		s.err = &ResyncError{Reason: reason, After: after}
	}
	s.wake()
}

// Next returns the next event, waiting for it. It returns a *ResyncError
// when the cursor cannot be resumed, ErrClosed after Close, or the
// command error when resubscribing fails (e.g. not_found for a deleted
// conversation).
func (s *Sub) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue[0] = Event{}
			s.queue = s.queue[1:]
			if len(s.queue) == 0 {
				s.queue = nil
			}
			s.mu.Unlock()
			return ev, nil
		}
		if s.closed {
			s.mu.Unlock()
			return Event{}, ErrClosed
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return Event{}, err
		}
		stale, old, oldConn := s.stale, s.serverID, s.conn
		s.mu.Unlock()
		if stale {
			if old != "" { // overflowed: the server still sends
				s.c.unsubscribe(ctx, oldConn, old)
			}
			if err := s.subscribe(ctx); err != nil {
				if ctx.Err() != nil {
					return Event{}, ctx.Err()
				}
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
			continue
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Cursor is the seq of the last stored event queued: where the
// subscription resumes.
func (s *Sub) Cursor() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Epoch identifies the database the cursor belongs to.
func (s *Sub) Epoch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Close ends the subscription.
func (s *Sub) Close() error {
	s.mu.Lock()
	s.closed = true
	id, cn := s.serverID, s.conn
	s.queue = nil
	s.mu.Unlock()
	s.wake()
	if id != "" {
		s.c.unbind(id, s)
		ctx, cancel := context.WithTimeout(s.c.ctx, 2*time.Second)
		defer cancel()
		s.c.unsubscribe(ctx, cn, id)
	}
	return nil
}

// unsubscribe ends a server subscription if its connection is still the
// current one; failures do not matter (the connection is gone then).
func (c *Client) unsubscribe(ctx context.Context, cn *conn, id string) {
	c.mu.Lock()
	same := c.cur == cn && cn != nil
	c.mu.Unlock()
	if same {
		_ = c.call(ctx, protocol.Command{Op: protocol.OpUnsubscribe, Sub: id}, nil, nil)
	}
}
