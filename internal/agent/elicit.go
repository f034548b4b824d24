package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Elicitation: a tool, while it runs, asks the user for input (MCP
// elicitation/create; DESIGN.md §11.6). The turn waits as it does for an
// approval: the request is stored with the round of tool calls it came in
// (Record.Wait, the approvals' machinery), its id joins the conversation's
// waiting list, and an elicitation_request event shows it to every
// client. The answer (Runner.Elicit, from any client) is stored first:
//
//   - while the call still runs here, the answer goes to it at once and
//     the tool goes on;
//   - while it runs on another live instance sharing the database, that
//     instance learns of the committed answer as it publishes the event
//     (Runner.Committed) and gives the call the stored answer;
//   - when nothing runs the call any more (the process restarted, or was
//     killed), the answer resumes the stored round like an approval's
//     decision does: the call runs again, and when its tool asks again,
//     the stored answers are given back in order without asking anyone.
//
// So a stdio server that died with agentik still gets the user's answer,
// as a fresh run of the same call.

// Elicitation modes.
const (
	ElicitForm = "form" // a JSON-schema form
	ElicitURL  = "url"  // a link the user opens; the answer says they are done
	// ElicitCredential: a per-user tool server needs the user's own
	// credential (tool/peruser.go); URL is where to give it, and storing
	// it accepts the request (Inbox.ResolveCredential). A "credential"
	// inbox item.
	ElicitCredential = "credential"
)

// Elicitation actions.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// Event types of elicitations.
const (
	EventElicitationRequest = "elicitation_request"
	EventElicitation        = "elicitation"
	// EventToolProgress is a running tool call's progress (toolcall.go).
	EventToolProgress = "tool_progress"
)

// ElicitRequest is what a tool asks the user.
type ElicitRequest struct {
	Server  string          // the MCP server that asks
	Mode    string          // ElicitForm or ElicitURL ("" = form)
	Message string          // why it asks, shown to the user
	Schema  json.RawMessage // form: the requested schema (flat object of primitives)
	URL     string          // url mode: what to open
	// ElicitationID is the server's id of a URL-mode elicitation.
	ElicitationID string
}

// ElicitResult is the user's answer, for the tool.
type ElicitResult struct {
	Action  string          // ElicitAccept, ElicitDecline or ElicitCancel
	Content json.RawMessage // accept of a form: the object that matches the schema
}

// Elicitation is one stored request with its answer once given.
type Elicitation struct {
	ID             string // the request id clients answer
	ConversationID string
	CallID         string // the tool call that asked
	Index          int    // the how-manieth ask of that call (0 first)
	ElicitRequest
	Requested time.Time
	Answered  bool
	Action    string
	Content   json.RawMessage
	// AnsweredBy and AnsweredAt say who answered and when (the inbox
	// shows them; a late answer's conflict names them).
	AnsweredBy string
	AnsweredAt time.Time
}

// ElicitAnswer is an answer to store (Record.Elicit). The store refuses it
// with not_found for an unknown request and conflict for one answered or
// no longer waited for, and sets Last when no request or call of the
// conversation waits any more (then this instance owns the turn).
type ElicitAnswer struct {
	RequestID string
	Action    string
	Content   json.RawMessage
	By        string // who answered: a user id ("" when the call's end cancelled it)
	Last      bool
}

// ElicitChange is a Record's elicitation change: Ask stores a request
// (its id joins the waiting list), Answer answers one.
type ElicitChange struct {
	Ask    *Elicitation
	Answer *ElicitAnswer
}

// ElicitStore is a Store that keeps elicitations (both of agentik's
// stores do). Elicitations returns the conversation's stored requests,
// ordered by call and index.
type ElicitStore interface {
	Elicitations(ctx context.Context, conversationID string) ([]Elicitation, error)
}

// ElicitInput is a client's answer.
type ElicitInput struct {
	RequestID string
	Action    string
	Content   json.RawMessage
}

// maxElicitContent caps the content of an answer.
const maxElicitContent = 64 << 10

// elicit is the Elicit hook of one tool call: it stores the request, and
// waits for the answer or the call's end.
func (s *callScope) elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error) {
	if !s.enter() {
		return ElicitResult{}, errors.New("the tool call is over")
	}
	defer s.wg.Done()
	t := s.t
	s.mu.Lock()
	idx := s.asked
	s.asked++
	s.mu.Unlock()
	if req.Mode == "" {
		req.Mode = ElicitForm
	}
	if idx < len(s.replay) {
		// Asked again after a restart: the answer given meanwhile.
		a := s.replay[idx]
		t.r.log.Info("elicitation_replayed", "conversation_id", t.conv.ID, "request_id", a.ID)
		return ElicitResult{Action: a.Action, Content: a.Content}, nil
	}
	e := Elicitation{ID: NewID(), ConversationID: t.conv.ID, CallID: s.call.ID, Index: idx, ElicitRequest: req, Requested: t.r.now()}
	w := &elicitWait{conversationID: t.conv.ID, answer: make(chan ElicitResult, 1), poke: make(chan struct{}, 1)}
	ch := w.answer
	t.r.mu.Lock()
	if t.r.elicits == nil {
		t.r.elicits = map[string]*elicitWait{}
	}
	t.r.elicits[e.ID] = w
	t.r.mu.Unlock()
	defer func() {
		t.r.mu.Lock()
		delete(t.r.elicits, e.ID)
		t.r.mu.Unlock()
	}()
	rec := &Record{Event: t.r.event(t.conv.ID, Event{Type: EventElicitationRequest, RequestID: e.ID, Server: req.Server,
		Mode: req.Mode, Ask: req.Message, Schema: req.Schema, URL: req.URL, CallID: s.call.ID}), Elicit: &ElicitChange{Ask: &e}}
	if !t.roundStored {
		// The round is stored with the first wait, so a restart resumes
		// it; its results resolve it as they are written.
		for _, c := range s.rest {
			rec.Wait = append(rec.Wait, PendingCall{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Requested: e.Requested})
		}
		t.roundStored = rec.Wait != nil
	}
	if err := t.emitRecs(rec, t.r.waitingRecord(t.conv.ID)); err != nil {
		return ElicitResult{}, err
	}
	t.r.log.Info("elicitation_waiting", "conversation_id", t.conv.ID, "request_id", e.ID, "server", req.Server)
wait:
	for {
		select {
		case res := <-ch:
			return res, nil
		case <-w.poke:
			// An answer was committed, maybe by another instance: read
			// whether it is this request's.
			if res, ok := t.storedAnswer(ctx, e.ID); ok {
				return res, nil
			}
		case <-ctx.Done():
			break wait
		case <-t.ctx.Done():
			break wait
		}
	}
	if errors.Is(context.Cause(t.ctx), errShutdown) {
		// The wait outlives the shutdown, stored; the answer resumes the
		// round after the restart.
		s.mu.Lock()
		s.parked = true
		s.mu.Unlock()
		return ElicitResult{}, context.Cause(t.ctx)
	}
	// Interrupted, or the call ended otherwise: the request no longer
	// waits, and says so.
	ans := &ElicitAnswer{RequestID: e.ID, Action: ElicitCancel}
	end := &Record{Event: t.r.event(t.conv.ID, Event{Type: EventElicitation, RequestID: e.ID, Action: ElicitCancel}), Elicit: &ElicitChange{Answer: ans}}
	if err := t.st.Append(context.WithoutCancel(t.ctx), end, t.r.waitingRecord(t.conv.ID)); err != nil && !errors.Is(err, ErrConflict) {
		t.r.log.Warn("elicitation_end_failed", "conversation_id", t.conv.ID, "request_id", e.ID, "err", err)
	}
	select {
	case res := <-ch: // answered in the meantime
		return res, nil
	default:
	}
	return ElicitResult{Action: ElicitCancel}, context.Cause(ctx)
}

// Elicit answers a tool's request for input: accept (with content that
// matches the request's schema), decline or cancel. The first answer wins;
// a second is a conflict; an unknown request is not_found; content that
// does not match is bad_request naming the field, and the request still
// waits. The answer reaches the tool that asked: at once while its call
// runs on this instance, else by running the stored round again here.
func (r *Runner) Elicit(ctx context.Context, id string, in ElicitInput) error {
	if err := r.access(ctx, id); err != nil {
		return err
	}
	if in.RequestID == "" {
		return Errorf(CodeBadRequest, "elicit needs request_id")
	}
	switch in.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
	default:
		return Errorf(CodeBadRequest, "action must be %q, %q or %q, got %q", ElicitAccept, ElicitDecline, ElicitCancel, Shorten(in.Action, 40))
	}
	st := r.storeOf(id)
	c, err := st.Conversation(ctx, id)
	if err != nil {
		return err
	}
	es := r.elicitsOf(id)
	if es == nil {
		return Errorf(CodeNotFound, "no elicitation %s waits in conversation %s", in.RequestID, id)
	}
	all, err := es.Elicitations(ctx, id)
	if err != nil {
		return fmt.Errorf("elicit: %w", err)
	}
	i := slices.IndexFunc(all, func(e Elicitation) bool { return e.ID == in.RequestID })
	if i < 0 {
		return Errorf(CodeNotFound, "no elicitation %s waits in conversation %s", in.RequestID, id)
	}
	e := all[i]
	if e.Answered {
		return Errorf(CodeConflict, "elicitation %s was already answered (%s)%s; nothing changed", e.ID, e.Action, AnsweredBy(e.AnsweredBy, e.AnsweredAt))
	}
	if !slices.Contains(c.Waiting, e.ID) {
		return Errorf(CodeConflict, "elicitation %s no longer waits; nothing changed", e.ID)
	}
	var content json.RawMessage
	if in.Action == ElicitAccept {
		if len(in.Content) > maxElicitContent {
			return Errorf(CodeBadRequest, "content is %d bytes long; at most %d are allowed", len(in.Content), maxElicitContent)
		}
		if e.Mode != ElicitURL && e.Mode != ElicitCredential {
			if content, err = checkElicitContent(e.Schema, in.Content); err != nil {
				return err
			}
		}
	}
	// The call that waits here is looked up before the answer is stored:
	// the commit wakes it (Committed), and it may read the stored answer
	// and end before Append returns; taken for gone, it would be run a
	// second time.
	r.mu.Lock()
	w := r.elicits[e.ID]
	r.mu.Unlock()
	ans := &ElicitAnswer{RequestID: e.ID, Action: in.Action, Content: content, By: PrincipalFrom(ctx).UserID}
	ev := Event{Type: EventElicitation, RequestID: e.ID, Action: in.Action}
	if err := st.Append(ctx, &Record{Event: r.event(id, ev), Elicit: &ElicitChange{Answer: ans}}, r.waitingRecord(id)); err != nil {
		return fmt.Errorf("elicit: %w", err)
	}
	r.log.Info("elicitation_answered", "conversation_id", id, "request_id", e.ID, "action", in.Action)
	if w != nil {
		w.answer <- ElicitResult{Action: in.Action, Content: content} // the first answer is the only one
		return nil
	}
	// The call that asked runs on another live instance: it learns of
	// the answer from the committed event (Committed, there).

	if ans.Last && r.orphaned(ctx, id) {
		r.resumeTurn(context.WithoutCancel(ctx), id)
	}
	return nil
}

// elicitWait is a request a tool call of this runner waits for: where
// its answer goes.
type elicitWait struct {
	conversationID string
	answer         chan ElicitResult // given on this instance (Runner.Elicit); buffered 1
	poke           chan struct{}     // an answer of the conversation was committed (Committed); buffered 1
}

// Committed tells the runner of events committed to the store, by this
// instance or another one sharing its database, as the store publishes
// them: an answer to an elicitation given on another instance reaches the
// call that waits for it here (it reads the stored answer). It must not
// block: it only wakes the waiting calls of a conversation that got an
// elicitation event.
func (r *Runner) Committed(evs []Encoded) {
	for _, ev := range evs {
		if ev.Type != EventElicitation || ev.ConversationID == "" {
			continue
		}
		r.mu.Lock()
		for _, w := range r.elicits {
			if w.conversationID == ev.ConversationID {
				select {
				case w.poke <- struct{}{}:
				default: // woken already
				}
			}
		}
		r.mu.Unlock()
	}
}

// storedAnswer is request id's stored answer, if it has one.
func (t *turn) storedAnswer(ctx context.Context, id string) (ElicitResult, bool) {
	es := t.r.elicitsOf(t.conv.ID)
	if es == nil {
		return ElicitResult{}, false
	}
	all, err := es.Elicitations(ctx, t.conv.ID)
	if err != nil {
		t.r.log.Warn("elicitation_read_failed", "conversation_id", t.conv.ID, "request_id", id, "err", err)
		return ElicitResult{}, false
	}
	i := slices.IndexFunc(all, func(e Elicitation) bool { return e.ID == id })
	if i < 0 || !all[i].Answered {
		return ElicitResult{}, false
	}
	return ElicitResult{Action: all[i].Action, Content: all[i].Content}, true
}

// orphaned reports whether no live instance runs conversation id's turn
// (its call that asked is gone with it): then the answer resumes the
// stored round here. A turn another live instance runs keeps running
// there.
func (r *Runner) orphaned(ctx context.Context, id string) bool {
	if r.cfg.Cluster == nil {
		return true
	}
	convs, err := r.cfg.Cluster.OrphanedTurns(ctx)
	if err != nil {
		r.log.Error("elicitation_resume_failed", "conversation_id", id, "err", err)
		return false
	}
	return slices.ContainsFunc(convs, func(c Conversation) bool { return c.ID == id })
}
