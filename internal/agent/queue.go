package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Values of send's on_busy: what a send does while a turn runs.
const (
	OnBusyReject    = "reject"    // fail with busy (the default)
	OnBusyQueue     = "queue"     // wait in the queue, after the sends queued before it
	OnBusyInterrupt = "interrupt" // go first in the queue and interrupt the running turn
)

// The queue of one conversation is bounded: a send queued past either
// bound is bad_request and nothing is queued. The stores keep the rule
// (Record.Enqueue), in the transaction that queues.
const (
	MaxQueued      = 100     // queued sends
	MaxQueuedBytes = 8 << 20 // of their content as stored (JSON)
)

// maxStartTries bounds how often startNext tries the queue's next send when
// the one it tried was cancelled or started meanwhile.
const maxStartTries = 8

// QueuedSend is a send waiting for the turns before it. It is stored at
// once but is not yet a Message: when it starts, its user message (with the
// same id) goes into history; a cancelled one never does.
type QueuedSend struct {
	MessageID      string
	ConversationID string
	Content        []Content
	ClientID       string
	Date           time.Time
	// Front puts it before the sends queued already (on_busy interrupt);
	// only read when it is enqueued.
	Front bool
	// Position is its place in the queue (1 runs next), set by reads.
	Position int
}

// QueuePage is a page of a conversation's queue.
type QueuePage struct {
	Sends []QueuedSend
	Total int // sends queued in all
	// NextOffset is the offset of the next page when sends follow this
	// one; 0 at the end.
	NextOffset int
}

// sendBusy is Start with on_busy queue or interrupt (see the OnBusy
// values). A send that finds the conversation idle with nothing queued
// starts at once. A queued one is stored at once with a queued event and
// starts, in order, when the turns before it have ended, across restarts.
func (r *Runner) sendBusy(ctx context.Context, id string, content []Content, clientID, onBusy string) (SendResult, error) {
	if err := CheckContent(content); err != nil {
		return SendResult{}, err
	}
	if len(clientID) > 200 {
		return SendResult{}, Errorf(CodeBadRequest, "client_id is %d bytes long; at most 200 are allowed", len(clientID))
	}
	st := r.storeOf(id)
	c, err := st.Conversation(ctx, id)
	if err != nil {
		return SendResult{}, err
	}
	if !c.Running && c.Queued == 0 {
		res, err := r.startMessage(ctx, id, nil, StartInput{Content: content, ClientID: clientID})
		if !errors.Is(err, ErrBusy) {
			return res, err
		}
	}
	if by := r.sentBy(ctx, c); by.ID != "" {
		// A queued send keeps no sender: it would start unmarked, billed
		// to the owner.
		return SendResult{}, Errorf(CodeBusy, "a turn is running in conversation %s: an admin's message into another user's conversation is not queued; send it once the turn ends", id)
	}
	content, undo, err := r.attachFiles(ctx, content) // filepart.go
	if err != nil {
		return SendResult{}, err
	}
	res, err := r.enqueue(ctx, st, id, content, clientID, onBusy)
	if err != nil {
		undo()
	}
	return res, err
}

// enqueue queues a send once content's files are attached.
func (r *Runner) enqueue(ctx context.Context, st Store, id string, content []Content, clientID, onBusy string) (SendResult, error) {
	if _, err := r.modelContent(ctx, id, content, true); err != nil { // read again as it starts
		return SendResult{}, err
	}
	if !r.ModelConfigured() {
		return SendResult{}, Errorf(CodeUnavailable, "%s", r.cfg.Unavailable)
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return SendResult{}, errClosed
	}
	if res, ok, err := r.queuedDuplicate(ctx, st, id, clientID); err != nil || ok {
		return res, err
	}
	qs := QueuedSend{MessageID: NewID(), ConversationID: id, Content: content, ClientID: clientID, Date: r.now(), Front: onBusy == OnBusyInterrupt}
	rec := &Record{Event: r.event(id, Event{Type: EventQueued, MessageID: qs.MessageID, Content: content}), Enqueue: &qs}
	if err := st.Append(ctx, rec); err != nil {
		if errors.Is(err, ErrBadRequest) && clientID != "" {
			// Lost a race with a queued send of the same client_id.
			if res, ok, _ := r.queuedDuplicate(ctx, st, id, clientID); ok {
				return res, nil
			}
		}
		return SendResult{}, fmt.Errorf("queue: %w", err)
	}
	res := SendResult{ConversationID: id, MessageID: qs.MessageID, Queued: true, Position: rec.Event.Event.Position}
	if onBusy == OnBusyInterrupt {
		if _, err := r.Interrupt(ctx, id); err != nil {
			return SendResult{}, fmt.Errorf("queue: message %s is queued first, but interrupting the turn failed: %w", qs.MessageID, err)
		}
	}
	// The turn may have ended before the send was queued: then nobody else
	// starts it.
	r.startNext(context.WithoutCancel(ctx), id)
	return res, nil
}

// queuedDuplicate answers a send whose client_id is already used in the
// conversation, in history or in the queue.
func (r *Runner) queuedDuplicate(ctx context.Context, st Store, id, clientID string) (SendResult, bool, error) {
	if clientID == "" {
		return SendResult{}, false, nil
	}
	if m, ok, err := messageByClientID(ctx, st, id, clientID); err != nil || ok {
		return SendResult{ConversationID: id, MessageID: m.ID, Seq: m.Seq, Duplicate: true}, ok, err
	}
	q, err := st.Queue(ctx, QueueQuery{ConversationID: id, ClientID: clientID, Limit: 1})
	if err != nil {
		return SendResult{}, false, fmt.Errorf("queue: %w", err)
	}
	if len(q) == 0 {
		return SendResult{}, false, nil
	}
	return SendResult{ConversationID: id, MessageID: q[0].MessageID, Duplicate: true, Queued: true, Position: q[0].Position}, true, nil
}

// CancelQueued removes a queued send before it starts: a queue_cancelled
// event. One that already started is a conflict; one never queued is
// not_found.
func (r *Runner) CancelQueued(ctx context.Context, id, messageID string) error {
	if err := r.access(ctx, id); err != nil {
		return err
	}
	if messageID == "" {
		return Errorf(CodeBadRequest, "cancel_queued needs message_id")
	}
	st := r.storeOf(id)
	if _, err := st.Conversation(ctx, id); err != nil {
		return err
	}
	rec := &Record{Event: r.event(id, Event{Type: EventQueueCancelled, MessageID: messageID}), Dequeue: messageID}
	if err := st.Append(ctx, rec); err != nil {
		return fmt.Errorf("cancel queued: %w", err)
	}
	return nil
}

// finishTurn forgets a turn that has written its end and starts the
// conversation's next queued send, before the turn's goroutine is done (so
// Close waits for the start).
func (r *Runner) finishTurn(t *turn) {
	r.forget(t)
	r.startNext(context.WithoutCancel(t.ctx), t.conv.ID)
	r.wg.Done()
}

// startNext starts the conversation's first queued send if no turn runs
// there, here or on another instance. Starting removes the send from the
// queue in the transaction that marks the conversation running, so of
// several instances (or callers) trying at once exactly one starts it.
func (r *Runner) startNext(ctx context.Context, id string) {
	for range maxStartTries {
		if !r.tryStartNext(ctx, id) {
			return
		}
	}
}

// tryStartNext tries once; it reports whether to try again (the send it
// tried was cancelled or started meanwhile).
func (r *Runner) tryStartNext(ctx context.Context, id string) (again bool) {
	if !r.mayStart(id) {
		return false
	}
	st := r.storeOf(id)
	c, err := st.Conversation(ctx, id)
	if err != nil || c.Running || c.Queued == 0 {
		if err != nil && !errors.Is(err, ErrNotFound) {
			r.log.Error("queue_start_failed", "conversation_id", id, "err", err)
		}
		return false
	}
	q, err := st.Queue(ctx, QueueQuery{ConversationID: id, Limit: 1}) // the head only
	if err != nil || len(q) == 0 {
		if err != nil {
			r.log.Error("queue_start_failed", "conversation_id", id, "err", err)
		}
		return false
	}
	next := q[0]
	if err := r.mayRun(ctx, OwnerOf(c)); err != nil {
		// The owner is disabled, deleted or over budget: the send stays
		// queued, and starts with the conversation's next turn or restart.
		r.log.Info("queue_start_refused", "conversation_id", id, "reason", ErrorCode(err))
		return false
	}
	t, err := r.claim(ctx, st, c, turnOptions{clientID: next.ClientID, prompt: next.Content, traced: true}, func() error {
		if r.held[id] > 0 {
			return errAgain
		}
		return nil
	})
	if err != nil {
		return false
	}
	user := Message{Type: MessageUser, ID: next.MessageID, ConversationID: id, Date: r.now(), Content: next.Content, ClientID: next.ClientID}
	recs := r.startRecords(ctx, c, user)
	recs[0].Dequeue = next.MessageID
	if err := r.begin(ctx, t, nil, recs, nil); err != nil {
		switch {
		case errors.Is(err, ErrConflict):
			return true // started or cancelled meanwhile: try the next one
		case errors.Is(err, ErrBusy), errors.Is(err, ErrNotFound):
			// A turn runs (its end starts the next), or the conversation is gone.
		default:
			r.log.Error("queue_start_failed", "conversation_id", id, "err", err)
		}
	}
	return false
}

// mayStart reports whether a queued send of the conversation may start
// here now.
func (r *Runner) mayStart(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed && r.turns[id] == nil && r.held[id] == 0
}

// hold keeps the conversation's queued sends from starting until release
// is called (a conversation being deleted).
func (r *Runner) hold(id string) (release func()) {
	r.mu.Lock()
	r.held[id]++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.held[id]--; r.held[id] <= 0 {
			delete(r.held, id)
		}
		r.mu.Unlock()
	}
}

// recoverQueued starts the queued sends of idle conversations: those whose
// previous turn ended while no instance was there to start them.
func (r *Runner) recoverQueued(ctx context.Context) error {
	ids, err := r.cfg.Cluster.QueuedIdle(ctx)
	if err != nil {
		return fmt.Errorf("recover queued sends: %w", err)
	}
	for _, id := range ids {
		r.startNext(context.WithoutCancel(ctx), id)
	}
	return nil
}

// Queue returns a page of a conversation's queued sends, the next to run
// first: q.Offset skipped, at most q.Limit, bounded by q.Bytes (see
// QueueQuery; q.ConversationID is id, q.ClientID unused).
func (r *Runner) Queue(ctx context.Context, id string, q QueueQuery) (QueuePage, error) {
	if err := r.readAccess(ctx, id); err != nil {
		return QueuePage{}, err
	}
	if err := checkPage(q.Offset, q.Limit); err != nil {
		return QueuePage{}, err
	}
	st := r.storeOf(id)
	c, err := st.Conversation(ctx, id)
	if err != nil {
		return QueuePage{}, err
	}
	q.ConversationID, q.ClientID = id, ""
	sends, err := st.Queue(ctx, q)
	if err != nil {
		return QueuePage{}, fmt.Errorf("queue: %w", err)
	}
	p := QueuePage{Sends: sends, Total: c.Queued}
	if n := q.Offset + len(sends); n < c.Queued && len(sends) > 0 {
		p.NextOffset = n
	}
	if p.Sends == nil {
		p.Sends = []QueuedSend{}
	}
	return p, nil
}

// CheckQueueRoom is the queue's bound (MaxQueued, MaxQueuedBytes): queued
// sends already waiting, and the bytes of their content with the new
// one's.
func CheckQueueRoom(id string, queued, bytes int) error {
	if queued >= MaxQueued {
		return Errorf(CodeBadRequest, "conversation %s has %d queued sends, the most it may hold; wait for them to run, or cancel some", id, queued)
	}
	if bytes > MaxQueuedBytes {
		return Errorf(CodeBadRequest, "the queued sends of conversation %s would hold %d bytes, past the %d a queue may hold; wait for them to run, or cancel some", id, bytes, MaxQueuedBytes)
	}
	return nil
}
