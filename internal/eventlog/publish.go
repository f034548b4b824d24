package eventlog

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/agentik/agentik/internal/agent"
)

// CatchUpPage is how many stored events one catch-up read takes, so a long
// outage is published in bounded pieces rather than in one slice.
const CatchUpPage = 1000

// Publisher is ordered publication: it hands the committed events to a
// publish func in seq order and exactly once, whoever committed them (this
// instance's writer, or another instance on the same PostgreSQL database).
// Its UpTo is the only caller of publish, so publish never sees a lower
// seq after a higher one (the broker relies on it).
type Publisher struct {
	// read returns the committed events above after and below before, at
	// most limit, in seq order (the store's read of its log).
	read func(ctx context.Context, after, before int64, limit int) ([]agent.Encoded, error)

	mu        sync.Mutex
	publish   func([]agent.Encoded) // nil until Start
	published int64                 // the highest seq handed to publish
}

// NewPublisher returns a Publisher that has published through seq from
// (the head when the store opened) and reads the log with read.
func NewPublisher(from int64, read func(ctx context.Context, after, before int64, limit int) ([]agent.Encoded, error)) *Publisher {
	return &Publisher{read: read, published: from}
}

// Start sets publish, and reports false if it was set already.
func (p *Publisher) Start(publish func([]agent.Encoded)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.publish != nil {
		return false
	}
	p.publish = publish
	return true
}

// Started reports whether Start has set publish.
func (p *Publisher) Started() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.publish != nil
}

// Published is the highest seq published so far.
func (p *Publisher) Published() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.published
}

// UpTo publishes the committed events above the ones published so far.
//
// upTo is a seq known to be committed; if it is published already, UpTo
// returns at once. own are the events the writer just committed, in seq
// order and contiguous (the writer held the seq lock); UpTo reads the
// events below them that other instances committed (all of them are
// visible: they committed before this writer got the lock) and publishes
// own from memory. Without own (a notification, a reconnect) it publishes
// every committed event it can read (upTo math.MaxInt64: all): a later
// notification then costs nothing. Reading more than upTo is safe because
// seqs become visible in order, so a read sees a prefix of the log, never
// a gap that fills later.
//
// On a read error it publishes nothing more and leaves what it published
// where it is: a later call (the next commit, notification or reconnect)
// publishes the rest, late but in order and without loss.
func (p *Publisher) UpTo(ctx context.Context, upTo int64, own []agent.Encoded) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.publish == nil || upTo <= p.published {
		return nil
	}
	before := int64(math.MaxInt64)
	if len(own) > 0 {
		before = own[0].Seq
	}
	for p.published < before-1 {
		evs, err := p.read(ctx, p.published, before, CatchUpPage)
		if err != nil {
			return fmt.Errorf("catch up after %d: %w", p.published, err)
		}
		p.hand(evs)
		if len(evs) < CatchUpPage {
			break // the rest of the gap was pruned, or nothing more is committed
		}
	}
	for i, ev := range own {
		if ev.Seq > p.published {
			p.hand(own[i:])
			break
		}
	}
	return nil
}

// hand publishes evs (in seq order, above p.published). p.mu is held.
func (p *Publisher) hand(evs []agent.Encoded) {
	if len(evs) == 0 {
		return
	}
	p.publish(evs)
	p.published = evs[len(evs)-1].Seq
}
