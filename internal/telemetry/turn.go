package telemetry

import (
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// countTurns counts the ended turns among evs by outcome and duration, as
// a client would see them: turn_started opens a turn, an error or
// interrupted event sets its outcome, end closes it (duration is the
// difference of the events' dates). evs are one batch this instance
// committed (Committed): an instance counts the turns whose end it
// commits, so the counts add up across instances sharing a database.
// A turn that began on another instance (a handover) is counted without
// a duration.
func (m *Metrics) countTurns(evs []agent.Encoded) {
	var w *turnWatch
	for i := range evs {
		if !watched(evs[i]) {
			continue
		}
		ev, err := evs[i].Decode()
		if err != nil {
			continue
		}
		if w == nil {
			m.turnsMu.Lock()
			defer m.turnsMu.Unlock()
			w = &m.turnsW
		}
		w.see(ev)
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
