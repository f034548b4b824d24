package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// emitQueue is how many records a turn may have waiting to be written.
// While the store is busy, consecutive append_text events waiting here are
// merged into one, so a model faster than the disk costs fewer events, with
// the same text.
const emitQueue = 256

// textLinger is how long a streamed piece of text waits for more text to
// join it in one append_text event. It is below what a reader notices (the
// UI renders once per 16 ms frame) and above the gap between tokens of a
// fast model, so a 1000-token/s stream costs about one event per 8 tokens
// on the wire and in the log, while a 50-token/s stream keeps one event per
// token.
const textLinger = 8 * time.Millisecond

// turn is one running turn: the user's message, model rounds and tool
// calls, until exactly one end event.
type turn struct {
	r      *Runner
	st     Store // the store that keeps conv
	conv   Conversation
	ctx    context.Context // cancelled by Interrupt or Close
	cancel context.CancelCauseFunc
	done   chan struct{}
	ending bool   // the end is being written; guarded by r.mu
	ended  func() // Config.TurnContext's end

	clientID string        // of the user's message that started it
	sentBy   string        // the admin acting in another's conversation who sent that message (actas.go)
	started  chan struct{} // closed once that message's write returned

	// clientTools are offered to the model besides the server's tools; a
	// call to one ends the turn for the client to run it (completion.go).
	clientTools []ToolSpec
	// knowledge are the bases the request attached (knowledge.go);
	// citations the passages file_search gave the turn so far.
	knowledge     []string
	convKnowledge []string // the conversation's, read once (nil: not yet)
	files         []string // the files its user messages attach (filepart.go), searched too
	citations     []Citation
	// format and choice shape its model calls: format each, choice the
	// next (ToolChoice.AfterRound after each round of tools).
	format *ResponseFormat
	choice *ToolChoice

	title  bool          // the model names the conversation once this turn answered (title.go)
	prompt []Content     // the user's message
	answer string        // the model's last answer text
	resume []PendingCall // a resumed turn's decided round, run first (see approval.go)
	app    []ToolCall    // an MCP App's call: the turn runs it and ends (appcall.go)
	// roundStored: the running round of tool calls is stored, as a call
	// of it waited for the user (elicit.go); each result resolves its call.
	roundStored bool
	// parked: a shutdown ended a call's wait for the user, which stays
	// stored; the turn stops without an end and resumes once answered.
	parked bool
	// cont is the stored tail of the dead turn this one continues
	// (recovery.go): its kept answer is the prefix of the first model
	// call, whose new text joins it; nil once that call returned.
	cont *turnTail
	// frozen: a shutdown stopped the turn to have it continued after the
	// start (Runner.Close): from then on nothing more is written, as if
	// the process had died there.
	frozen atomic.Bool

	// mem is the turn's working memory as written so far, once loaded: an
	// early end answers the tool calls it leaves open (calls.go).
	mem *[]ModelMessage

	items   chan emitItem
	emitErr error // first write error of the emitter; read after it stopped
	usage   Usage
	context *ContextSize // of the last model call; put on the end record

	summaryUsage Usage // of compaction summary calls not yet on a model call's usage

	// rebuilt is working memory as rebuilt from the active path when the
	// store had it stale (branch.go), until the turn writes memory: its
	// first record that does writes all of it (withRebuilt).
	rebuilt []ModelMessage

	agent  AgentDef // the conversation's agent, resolved as the turn starts (agentturn.go)
	recall string   // the memory section of the system prompt for the next model call (memory.go)
	// project is the conversation's project as the turn starts
	// (project.go): its instructions follow the agent's in the system
	// prompt, its knowledge is searched.
	project Project
	depth   int // delegations that led to this conversation
}

type emitItem struct {
	rec *Record
	ack chan error // nil for fire-and-forget progress
	at  time.Time  // when text was produced (see pace)
}

// run is the turn's goroutine.
func (t *turn) run() {
	defer t.r.finishTurn(t) // and start the next queued send
	defer t.cancel(nil)
	t.items = make(chan emitItem, emitQueue)
	emitDone := make(chan struct{})
	go func() { defer close(emitDone); t.emitLoop() }()

	err := t.loop()
	t.r.mu.Lock()
	t.ending = true
	t.r.mu.Unlock()
	if err == nil {
		err = t.emitErr // a write of fire-and-forget text failed
	}
	cause := context.Cause(t.ctx)
	switch {
	case t.frozen.Load(): // left running in the store: Recover continues it
		err = nil
		t.r.log.Info("turn_left_to_continue", "conversation_id", t.conv.ID)
	case errors.Is(err, errParked): // the turn waits, stored; no end yet
		err = nil
		if h := t.r.hooks.parked; h != nil {
			h(t.conv.ID)
		}
	case err == nil:
		err = t.emitRecs(t.withContext(t.r.endRecords(t.conv.ID, t.usagePtr()))...)
		if err == nil && t.title {
			t.r.startTitle(t)
		}
	case t.ctx.Err() != nil && (errors.Is(cause, errInterrupt) || errors.Is(cause, errShutdown)):
		recs := append(t.openAnswers("interrupted before the tool ran"), &Record{Event: t.r.event(t.conv.ID, Event{Type: EventInterrupted})})
		err = t.emitRecs(t.withContext(append(recs, t.r.endRecords(t.conv.ID, t.usagePtr())...))...)
	default:
		e := t.failure(err)
		recs := append(t.openAnswers(whyFailed+e.Message), t.r.failRecords(t.conv.ID, e, t.usagePtr())...)
		err = t.emitRecs(t.withContext(recs)...)
	}
	close(t.items)
	<-emitDone
	if err != nil {
		// The conversation stays marked running; Recover ends it once the
		// store writes again.
		t.r.log.ErrorContext(t.ctx, "turn_write_failed", "conversation_id", t.conv.ID, "err", err)
	}
}

// openAnswers answer the calls the turn's memory leaves open as it ends
// early (calls.go).
func (t *turn) openAnswers(why string) []*Record {
	if t.mem == nil {
		return nil
	}
	return t.r.answerRecords(t.conv.ID, *t.mem, why)
}

// failure is the error a failed turn reports. A model or tool error says
// what happened; anything else (a failed write, a bug) is internal: its
// detail, which may name tables or paths, goes to the log only.
func (t *turn) failure(err error) *Error {
	var e *Error
	if t.emitErr == nil && errors.As(err, &e) && e.Code != CodeInternal {
		return e
	}
	if t.emitErr != nil {
		err = t.emitErr
	}
	t.r.log.ErrorContext(t.ctx, "turn_failed", "conversation_id", t.conv.ID, "err", err)
	return Errorf(CodeInternal, "the turn failed because of an internal error and was stopped; what was saved is kept; send the message again")
}

func (t *turn) usagePtr() *Usage {
	if t.usage == (Usage{}) {
		return nil
	}
	u := t.usage
	return &u
}

// emitLoop writes queued records in order, merging consecutive text. While
// text arrives faster than a frame can show it (see pace), a text record
// waits up to textLinger for more text to join it, so a fast model costs
// one event per few tokens instead of one per token, and a slow one pays
// no wait; a record of any other kind ends the wait.
func (t *turn) emitLoop() {
	ctx := context.WithoutCancel(t.ctx) // what was produced is kept even when interrupted
	linger := time.NewTimer(textLinger)
	linger.Stop()
	var p pace
	var batch []emitItem // reused: Append is done with recs when it returns
	var recs []*Record
	for it := range t.items {
		clear(batch)
		batch = append(batch[:0], it)
		var wait <-chan time.Time
		if isText(it) && p.hold(it.at) {
			linger.Reset(textLinger)
			wait = linger.C
		}
	drain:
		for len(batch) < emitQueue {
			var nx emitItem
			var ok bool
			if wait != nil {
				select {
				case nx, ok = <-t.items:
				case <-wait:
					wait = nil
					break drain
				}
			} else {
				select {
				case nx, ok = <-t.items:
				default:
					break drain
				}
			}
			if !ok {
				break drain
			}
			if isText(nx) {
				p.hold(nx.at)
			}
			last := batch[len(batch)-1]
			if isText(last) && isText(nx) {
				last.rec.Event.Event.Text += nx.rec.Event.Event.Text
				continue
			}
			batch = append(batch, nx)
			if wait != nil {
				wait = nil
				linger.Stop()
			}
		}
		if wait != nil {
			linger.Stop()
		}
		clear(recs)
		recs = recs[:0]
		for _, b := range batch {
			recs = append(recs, b.rec)
		}
		err := errFrozen
		if !t.frozen.Load() {
			err = t.st.Append(ctx, recs...)
		}
		if err != nil && t.emitErr == nil {
			t.emitErr = err
			t.cancel(fmt.Errorf("write: %w", err))
		}
		for _, b := range batch {
			if b.ack != nil {
				b.ack <- err
			}
		}
	}
}

func isText(it emitItem) bool {
	ev := it.rec.Event.Event
	return it.ack == nil && ev != nil && ev.Type == EventAppendText
}

// text queues an append_text event without waiting for it to be written.
func (t *turn) text(s string) {
	t.items <- emitItem{rec: &Record{Event: t.r.event(t.conv.ID, Event{Type: EventAppendText, Text: s})}, at: t.r.now()}
}

// emit queues records and waits until they are written.
func (t *turn) emitRecs(recs ...*Record) error {
	t.withRebuilt(recs)
	ack := make(chan error, len(recs))
	for _, rec := range recs {
		t.items <- emitItem{rec: rec, ack: ack}
	}
	var first error
	for range recs {
		if err := <-ack; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t *turn) emit(rec *Record) error { return t.emitRecs(rec) }

// withRebuilt makes the first of recs that writes working memory, after
// the turn rebuilt it, write all of it: the rebuilt memory, then what the
// record adds (a compaction's replacement stands as it is). The store's
// stale mark goes with that record; until it is written, memory stays
// stale and whoever reads it next rebuilds it again.
func (t *turn) withRebuilt(recs []*Record) {
	if t.rebuilt == nil {
		return
	}
	for _, rec := range recs {
		switch {
		case rec.ReplaceMemory:
		case len(rec.Memory) > 0:
			rec.Memory = append(t.rebuilt, rec.Memory...)
			rec.ReplaceMemory = true
		default:
			continue
		}
		t.rebuilt = nil
		return
	}
}

// live queues a progress event (start_*, a tool call or result shown
// live) without waiting: the queue is FIFO, so it is written before any
// record queued after it, and a failed write ends the turn through
// emitErr. Only records whose success matters (messages, the end) wait.
func (t *turn) live(ev Event) error {
	t.items <- emitItem{rec: &Record{Event: t.r.event(t.conv.ID, ev)}}
	return nil
}

// loop runs model rounds until the model answers without tool calls.
func (t *turn) loop() error {
	mem, rebuilt, err := t.r.memory(context.WithoutCancel(t.ctx), t.st, t.conv.ID)
	if err != nil {
		return fmt.Errorf("load working memory: %w", err)
	}
	if rebuilt {
		t.rebuilt = slices.Clone(mem) // the rounds below may change mem's entries
	}
	if err := t.useAgent(); err != nil {
		return err
	}
	if len(t.app) > 0 {
		return t.appRound(mem)
	}
	if len(t.resume) > 0 {
		app := appRoundOf(t.resume)
		if mem, err = t.runPending(mem); err != nil {
			return err
		}
		if app {
			return nil // an app's call resumed: no model round (appcall.go)
		}
	} else if mem, err = t.openCallsAnswered(mem); err != nil {
		return err
	}
	t.mem = &mem
	t.files = memoryFiles(mem) // filepart.go
	if t.cont != nil && t.agent.A2A != "" && (t.cont.text != "" || t.cont.reasoning != "") {
		// A remote agent's answer cannot be continued: it would start
		// again. What it streamed is kept, as before continuations.
		if err := t.emit(t.r.partialRecord(t.conv, t.cont)); err != nil {
			return err
		}
		return Errorf(CodeInterruptedByRestart, "the turn stopped without finishing: the server restarted while remote agent %s answered; send the message again", t.agent.Slug)
	}
	var unreported Usage // of model calls not yet on an answer
	for round := 0; ; round++ {
		if round == MaxToolRounds {
			return Errorf(CodeModelError, "the model asked for tools %d rounds in a row; stopping the turn", MaxToolRounds)
		}
		if err := t.r.mayRunFor(t.ctx, OwnerOf(t.conv), t.payer()); err != nil { // before every model call (standing.go)
			return err
		}
		specs := withClientTools(t.toolSpecs(), t.clientTools)
		t.recall = t.memoryPrompt() // memory.go: as it is now, changes of the last round included
		phase := ""
		size, text := 0, 0 // bytes of this answer so far, and of its text that went out
		kept := t.cont     // the answer this call continues (recovery.go)
		if kept != nil {
			phase, size = kept.phase, len(kept.text)+len(kept.reasoning)
		}
		resp, err := t.chat(&mem, specs, func(d Delta) error {
			n := len(d.Reasoning) + len(d.Text) + d.ToolArguments
			if d.Image != nil {
				n += len(d.Image.Data)
			}
			if size+n > t.r.cfg.MaxAnswerBytes {
				return Errorf(CodeModelError, "the model's answer passed %d bytes, the most one answer may have; the answer so far is kept", t.r.cfg.MaxAnswerBytes)
			}
			size += n
			text += len(d.Text)
			switch {
			case d.Reasoning != "":
				if phase != EventStartReasoning {
					phase = EventStartReasoning
					if err := t.live(Event{Type: EventStartReasoning}); err != nil {
						return err
					}
				}
				t.text(d.Reasoning)
			case d.Text != "":
				if phase != EventStartResponse {
					phase = EventStartResponse
					if err := t.live(Event{Type: EventStartResponse}); err != nil {
						return err
					}
				}
				t.text(d.Text)
			case d.Image != nil:
				return t.live(Event{Type: EventAppendImage, Mime: d.Image.Mime, Data: d.Image.Data})
			}
			return t.ctx.Err()
		})
		if kept != nil {
			// The new text goes on where the kept text stopped: one answer.
			t.cont = nil
			resp.Text, resp.Reasoning = kept.text+resp.Text, kept.reasoning+resp.Reasoning
			text += len(kept.text)
		}
		t.usage = t.usage.Add(resp.Usage)
		unreported = unreported.Add(resp.Usage)
		interrupted := t.ctx.Err() != nil
		if err != nil && !interrupted {
			// The model failed mid-answer (or passed the answer cap): keep
			// what went out, marked like an interrupted answer, before the
			// error.
			if len(resp.Text) > text {
				resp.Text = resp.Text[:text]
			}
			if resp.Text != "" || resp.Reasoning != "" {
				m := t.answerOf(Message{Type: MessageAssistant, ConversationID: t.conv.ID, Reasoning: resp.Reasoning, Interrupted: true})
				answer := ModelMessage{Role: RoleAssistant, Reasoning: resp.Reasoning}
				if resp.Text != "" {
					m.Content = []Content{Text(resp.Text)}
					answer.Content = m.Content
				}
				if u := unreported; u != (Usage{}) {
					m.Usage = &u
				}
				if werr := t.emit(t.r.messageRecord(m, answer)); werr != nil {
					return werr
				}
			}
			return err
		}

		answer := ModelMessage{Role: RoleAssistant, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls}
		if resp.Text != "" {
			answer.Content = []Content{Text(resp.Text)}
		}
		if interrupted {
			answer.ToolCalls = nil
		}
		var recs []*Record
		if resp.Text != "" || resp.Reasoning != "" || (len(answer.ToolCalls) == 0 && !interrupted) {
			m := t.answerOf(Message{Type: MessageAssistant, ConversationID: t.conv.ID, Content: answer.Content, Reasoning: resp.Reasoning, Interrupted: interrupted})
			// The usage of model calls that left no answer of their own
			// (tool calls only) goes on this one: a turn's answers add up
			// to its total.
			if u := unreported; u != (Usage{}) {
				m.Usage = &u
				unreported = Usage{}
			}
			recs = append(recs, t.r.messageRecord(m))
		}
		if interrupted {
			if len(recs) > 0 {
				recs[0].Memory = []ModelMessage{answer}
				if err := t.emitRecs(recs...); err != nil {
					return err
				}
			}
			return context.Cause(t.ctx)
		}
		// The assistant's snapshot goes into memory with the last record of
		// its part, so memory never holds calls without their message.
		for _, c := range answer.ToolCalls {
			recs = append(recs, t.r.messageRecord(Message{Type: MessageToolCall, ConversationID: t.conv.ID, CallID: c.ID, Name: c.Name, Arguments: c.Arguments}))
		}
		recs[len(recs)-1].Memory = []ModelMessage{answer}
		for _, c := range answer.ToolCalls {
			if err := t.live(Event{Type: EventToolCall, CallID: c.ID, Name: c.Name, Arguments: c.Arguments}); err != nil {
				return err
			}
		}
		if err := t.emitRecs(recs...); err != nil {
			return err
		}
		mem = append(mem, answer)
		if len(answer.ToolCalls) == 0 {
			t.answer = resp.Text
			return nil
		}
		if t.mustWait(answer.ToolCalls) {
			return t.park(answer.ToolCalls)
		}
		clientCalls := false
		var serverCalls []ToolCall
		for _, c := range answer.ToolCalls {
			if !t.isClientTool(c.Name) {
				serverCalls = append(serverCalls, c)
			}
		}
		for _, c := range answer.ToolCalls {
			if t.isClientTool(c.Name) {
				clientCalls = true // the client runs it; its result comes with the next send
				continue
			}
			res := t.callTool(c, serverCalls)
			serverCalls = serverCalls[1:]
			if t.parked {
				return errParked
			}
			if err := t.liveResult(res); err != nil {
				return err
			}
			rec := t.r.messageRecord(res, res.memory())
			if t.roundStored {
				rec.Resolve = c.ID
			}
			if err := t.emit(rec); err != nil {
				return err
			}
			mem = append(mem, res.memory())
		}
		t.roundStored = false
		if clientCalls {
			return nil
		}
		t.choice = t.choice.AfterRound()
		if t.ctx.Err() != nil {
			return context.Cause(t.ctx)
		}
	}
}

// liveResult queues a tool result's live events: memory_updated first
// when the call changed memory (memory.go), then tool_result.
func (t *turn) liveResult(res Message) error {
	if res.Memory != nil {
		if err := t.live(Event{Type: EventMemoryUpdated, CallID: res.CallID, Memory: res.Memory}); err != nil {
			return err
		}
	}
	return t.live(Event{Type: EventToolResult, CallID: res.CallID, Name: res.Name, Result: res.Result, IsError: res.IsError, Images: res.Images, Resources: res.Resources, Memory: res.Memory})
}

// callTool runs one tool call; failures become an error result. rest is
// the round's calls from c on, stored should the call wait for the user.
func (t *turn) callTool(c ToolCall, rest []ToolCall) Message {
	if strings.HasPrefix(c.Name, DelegatePrefix) && !t.isClientTool(c.Name) {
		return t.delegate(c)
	}
	if IsMemoryTool(c.Name) && !t.isClientTool(c.Name) && t.allows(c.Name) {
		return t.callMemory(c) // memory.go
	}
	if c.Name == ToolFileSearch && !t.isClientTool(c.Name) && len(t.fileSearchSpec()) > 0 {
		return t.callFileSearch(c) // knowledge.go
	}
	m := Message{Type: MessageToolResult, ConversationID: t.conv.ID, CallID: c.ID, Name: c.Name}
	switch {
	case !t.allows(c.Name) && !t.isClientTool(c.Name):
		m.Result, m.IsError = fmt.Sprintf("tool %q is not available to agent %s", c.Name, t.agent.Slug), true
	case t.ctx.Err() != nil:
		m.Result, m.IsError = "interrupted before the tool ran", true
	case t.r.cfg.Tools == nil:
		m.Result, m.IsError = fmt.Sprintf("tool %q is not available: no tools are configured", c.Name), true
	default:
		out, scope, err := t.runTool(c, rest)
		if scope.parked {
			t.parked = true
		}
		if err != nil {
			m.Result, m.IsError = err.Error(), true
			if t.ctx.Err() != nil {
				m.Result = "interrupted while the tool ran"
			}
		} else {
			m.Result, m.Images, m.Resources = out.Text, out.Images, out.Resources
		}
	}
	return m
}
