package agent

import "context"

// LastTurn is how a conversation's last turn ended, for the projections
// whose resume must tell a client that reconnects after the end (the AI
// SDK's GET …/stream, an AG-UI run without input): a turn that failed
// (interrupted_by_restart when its process died and it was not continued,
// a model's error) or was interrupted ends there with its error, not as a
// silent success.
type LastTurn struct {
	// Seq is where a replay of the turn starts: the seq of its first
	// event (its user message, for a send); 0 when the turn ended well or
	// there is none.
	Seq int64
	// Error is the error the turn ended with; nil when it did not fail.
	Error *Error
	// Interrupted: a person (or a shutdown) interrupted it; its answer
	// is kept, cut.
	Interrupted bool
}

// Failed reports whether the turn did not end well.
func (l LastTurn) Failed() bool { return l.Error != nil || l.Interrupted }

// lastTurnPage is how many of the active path's last messages LastTurn
// reads to find the turn's user message.
const lastTurnPage = 50

// LastTurn reads how conversation id's last turn ended (a running one:
// the zero LastTurn). Its messages are the last ones of the active path:
// an error message is a failed turn, an interrupted answer an
// interrupted one. Seq is found in the log: the first event after the
// last end before that message, at the earliest the user message it
// answers.
func (r *Runner) LastTurn(ctx context.Context, id string) (LastTurn, error) {
	c, err := r.conversation(ctx, id)
	if err != nil || c.Running {
		return LastTurn{}, err
	}
	n, _, err := r.pathInfo(ctx, c)
	if err != nil || n == 0 {
		return LastTurn{}, err
	}
	ms, err := r.messages(ctx, MessageQuery{ConversationID: id, Offset: max(0, n-lastTurnPage), Limit: lastTurnPage})
	if err != nil || len(ms) == 0 {
		return LastTurn{}, err
	}
	var lt LastTurn
	switch last := ms[len(ms)-1]; {
	case last.Type == MessageError:
		lt.Error = &Error{Code: last.Code, Message: last.Error}
	case last.Type == MessageAssistant && last.Interrupted:
		lt.Interrupted = true
	default:
		return LastTurn{}, nil
	}
	end := ms[len(ms)-1].Seq
	lt.Seq = ms[0].Seq
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Type == MessageUser {
			lt.Seq = ms[i].Seq
			break
		}
	}
	if r.cfg.Cluster == nil || c.Temp || lt.Seq <= 0 {
		return lt, nil
	}
	// A regenerated answer's turn began after the user message: after
	// the end of the branch it replaced.
	for after := lt.Seq - 1; after < end; {
		evs, err := r.cfg.Cluster.Events(ctx, EventQuery{After: after, ConversationID: id, Limit: partialPage})
		if err != nil {
			return LastTurn{}, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ae := range evs {
			after = ae.Seq
			if ae.Seq >= end {
				break
			}
			if ae.Event != nil && ae.Event.Type == EventEnd {
				lt.Seq = ae.Seq + 1
			}
		}
	}
	return lt, nil
}
