package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/broker"
)

// resubscribeWait is how long WatchTurns waits before subscribing again
// after its subscription failed (not after a slow-consumer drop, which
// resumes at once from its cursor).
const resubscribeWait = time.Second

// WatchTurns counts ended turns by outcome and duration from the committed
// event stream, as a client would see it: turn_started opens a turn, an
// error or interrupted event sets its outcome, end closes it (duration is
// the difference of the events' dates). It runs until ctx is done.
func (m *Metrics) WatchTurns(ctx context.Context, b *broker.Broker) {
	w := turnWatch{m: m, open: map[string]*openTurn{}}
	after := int64(-1) // live only: metrics count from start-up
	for ctx.Err() == nil {
		sub, err := b.Subscribe(ctx, broker.Stream{Kind: broker.StreamAll, Only: watchedEvent}, after, "")
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(resubscribeWait):
			}
			continue
		}
		for {
			it, err := sub.Next(ctx)
			if err != nil {
				var r *broker.ResyncError
				if errors.As(err, &r) && r.Reason == broker.ReasonSlowConsumer && r.After > 0 {
					after = r.After // resume: the stored events lose nothing
				}
				break
			}
			if !it.CaughtUp && watched(*it.Event) {
				if ev, err := it.Event.Decode(); err == nil {
					w.see(ev)
				}
			}
		}
		sub.Close()
	}
}

// watched reports whether see acts on an event of e's kind and type, read
// from the stored bytes without decoding: every other event (a streamed
// token above all) is skipped undecoded. Decoding every token cost 6 % of
// the server's CPU in the bench's mix.
func watched(e agent.Encoded) bool {
	switch e.Kind {
	case agent.KindAgent:
		return e.Type == agent.AgentTurnStarted || e.Type == agent.AgentDeleted
	case agent.KindConversation:
		switch e.Type {
		case agent.EventMessage: // see counts summaries only: the type is read without decoding the message
			return e.MessageType() == agent.MessageSummary
		case agent.EventError, agent.EventInterrupted, agent.EventEnd:
			return true
		}
	}
	return false
}

// watchedEvent is watched as the stream's filter: the broker then queues
// (and wakes the watcher for) only the events see acts on, not every
// token.
func watchedEvent(e *agent.Encoded) bool { return watched(*e) }

type openTurn struct {
	start   time.Time
	outcome string
}

type turnWatch struct {
	m    *Metrics
	open map[string]*openTurn // by conversation id
}

func (w *turnWatch) see(ev agent.AllEvent) {
	if a := ev.Agent; a != nil {
		switch a.Type {
		case agent.AgentTurnStarted:
			w.open[a.ConversationID] = &openTurn{start: ev.Date, outcome: OutcomeOK}
		case agent.AgentDeleted:
			delete(w.open, a.ConversationID)
		}
		return
	}
	e := ev.Event
	if e == nil {
		return
	}
	t := w.open[ev.ConversationID]
	switch e.Type {
	case agent.EventMessage:
		if e.Message != nil && e.Message.Type == agent.MessageSummary {
			w.m.compactions.Inc()
		}
	case agent.EventError:
		if t == nil { // a turn ended by recovery: no turn_started seen
			t = &openTurn{outcome: OutcomeError}
			w.open[ev.ConversationID] = t
		}
		t.outcome = OutcomeError
	case agent.EventInterrupted:
		if t == nil {
			t = &openTurn{}
			w.open[ev.ConversationID] = t
		}
		t.outcome = OutcomeInterrupted
	case agent.EventEnd:
		outcome, timed := OutcomeOK, false
		var d time.Duration
		if t != nil {
			outcome = t.outcome
			timed = !t.start.IsZero()
			d = ev.Date.Sub(t.start)
		}
		delete(w.open, ev.ConversationID)
		w.m.turnEnded(outcome, d, timed)
	}
}
