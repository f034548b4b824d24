package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"sync"
	"time"
)

// The causes of a turn's cancellation that end it as interrupted; any
// other cause (a failed write) ends it with an error.
var (
	errShutdown  = errors.New("server shutting down")
	errInterrupt = errors.New("interrupted")
)

// errClosed answers a send once the runner is closing.
var errClosed = Errorf(CodeUnavailable, "the server is shutting down; send the message again in a few seconds, once it (or another instance) is back")

// errFrozen answers the writes of a turn that a shutdown left to be
// continued (turn.frozen); it never leaves the package.
var errFrozen = errors.New("turn left to be continued after the restart")

// Config holds what a Runner needs.
type Config struct {
	Store     Store     // the stored conversations
	Cluster   Cluster   // recovery and remote interrupts; nil: this instance alone, nothing to recover
	Publisher Publisher // live fan-out of events that are never stored (tool servers)
	// Branches reads the stored conversations' trees (branch.go): the
	// database's, which app.Wire gives. nil: a stored conversation has no
	// branches (its history is flat; branch operations are unavailable).
	// A temp conversation's tree is Temps' (TempStore is a Brancher).
	Branches Brancher
	// Elicits reads the stored conversations' elicitations (elicit.go):
	// the database's, which app.Wire gives. nil: none is kept (an answer
	// finds no request). A temp conversation's are Temps'.
	Elicits ElicitStore
	// Temps keeps the temp conversations (temp.go); nil: none (creating
	// one is unavailable).
	Temps TempStore
	// Temp bounds the temp conversations; the runner reads ApprovalWait,
	// Temps' owner the rest.
	Temp  TempConfig
	Model Model // nil: no model configured, sends fail with unavailable
	// Configured says whether Model can answer now (llm.Live's: the
	// admin panel may leave the server without a provider); nil: whether
	// Model is set.
	Configured func() bool
	// ModelName is the default model's name, recorded on the answers it
	// writes (Message.Model) as the UI names it; "" when unknown.
	ModelName string
	Tools     Tools // nil: no tools
	// ContentTools, when set, is called instead of Tools.Call: its
	// results carry images and resources besides text (tool.Manager, and
	// the telemetry decorator over it). app.Wire gives the same tools as
	// Tools; nil: Tools.Call, text only.
	ContentTools ContentTools
	// Resources and Prompts are the tool servers' resources and prompts
	// (resource.go); nil: none.
	Resources    Resources
	Prompts      Prompts
	SystemPrompt string
	// Site is the admin panel's settings (site.go): its system prompt
	// and default budget override SystemPrompt and Budgets.Default; nil:
	// none.
	Site *Site
	// Catalog lists the models a conversation may name (settings.go); nil:
	// only the default model, whatever Model calls.
	Catalog Catalog
	// Titles says who names a conversation after its first answer:
	// TitlesModel (the model writes a short title) or TitlesFirstLine (the
	// first line of the first message; the default).
	Titles string
	// MaxAnswerBytes caps one answer of the model (text, reasoning and
	// images); past it the turn ends with an error, what came before kept.
	// DefaultMaxAnswerBytes when 0.
	MaxAnswerBytes int
	// Windows knows the context window of each model (context.go); nil:
	// DefaultContextWindow, lowered by what refusals teach.
	Windows Windows
	// SummaryModel makes the summaries of compaction; "" = the model.
	SummaryModel string
	// Unavailable explains how to configure a model; it is the message of
	// the error a send gets when Model is nil.
	Unavailable string
	Logger      *slog.Logger
	Now         Clock
	// TurnContext, when set, wraps each turn's context (tracing: the turn's
	// span becomes the parent of its model and tool calls); the returned
	// func is called once the turn has written its last record.
	TurnContext func(ctx context.Context, conversationID string) (context.Context, func())
	// Approval, when set, says whether a call of the tool waits for a
	// person's decision (see approval.go); nil: no call waits.
	Approval func(toolName string) bool
	// AppOnly, when set, says whether only MCP Apps may call the tool
	// (its _meta.ui.visibility): the model's call of it asks no one's
	// approval, for it is refused as an unknown tool.
	AppOnly func(toolName string) bool
	// ApprovalTimeout, when above 0, denies a tool call that waited longer
	// for a decision, with a reason the model reads; it counts from the
	// stored request time, so a deadline that passed while the server was
	// down is honoured at start. 0: calls wait until decided.
	ApprovalTimeout time.Duration
	// Budgets, when set, enforces the users' token budgets (budget.go).
	Budgets *Budgets
	// Users, when set, is asked before every turn and model call whether
	// the conversation's owner stands: nothing runs for a deleted or
	// disabled owner (standing.go). nil: every owner stands.
	Users UserStore
	// AfterFunc runs f in its own goroutine after d and returns what stops
	// it (time.AfterFunc's Stop); injected with Now so tests fire timers
	// themselves. nil: time.AfterFunc.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Agents keeps the agent definitions (agentdef.go); nil: memory.
	Agents AgentStore
	// Memory keeps the users' long-term memory (memory.go); nil: no
	// memory (no memory tools, nothing added to prompts, the API answers
	// unavailable).
	Memory MemoryStore
	// NoMemory turns memory off even with a Memory store
	// (AGENTIK_MEMORY=off).
	NoMemory bool
	// Search answers the memory_search tool; nil: the tool says search is
	// not available.
	Search Searcher
	// Remote answers for the remote agents among them (AgentDef.A2A):
	// agents of other runtimes; nil: none is reachable.
	Remote Remote
	// Continuations bounds how many times Recover continues one turn
	// whose process died (recovery.go): 0 means DefaultContinuations,
	// below 0 none (such a turn ends interrupted_by_restart, and Close
	// interrupts running turns instead of leaving them to be continued).
	Continuations int
	// DrainTimeout is how long Close lets running turns finish before it
	// stops the rest, which the next start (or another instance)
	// continues; 0: it stops them at once.
	DrainTimeout time.Duration
	// Audit records who changed what (audit.go); nil: nothing is recorded.
	Audit *Audit
	// Groups keeps the groups things are shared with (group.go); nil:
	// nobody is in a group, and nothing is shared with one.
	Groups GroupStore
	// Files searches knowledge for the file_search tool (knowledge.go);
	// nil: no knowledge.
	Files *Files
	// Projects is the index of projects the project rule reads
	// (access.go, project.go); nil: an empty one (no project exists until
	// the projects service is made over it).
	Projects *ProjectIndex
}

// Audit is the audit log the runner records in; nil when none.
func (r *Runner) Audit() *Audit { return r.cfg.Audit }

// Runner runs conversations: it owns the running turns, keeps temp
// conversations in Config.Temps and the others in the Store, and is the only
// place that decides what a turn emits.
type Runner struct {
	cfg       Config
	log       *slog.Logger
	now       Clock
	afterFunc func(time.Duration, func()) func() bool
	temps     TempStore  // nil: no temp conversations
	est       *estimator // prompt tokens, calibrated per conversation
	windows   Windows
	// startDefault is the catalog's default model at start, which
	// Config.ModelName names (settings.go, DefaultModelName).
	startDefault string

	mu    sync.Mutex
	turns map[string]*turn // running turns by conversation id
	// ends counts the turns that left turns, striped by conversation id
	// (endStripe): a send and a resume compare it around their read of
	// the conversation to know whether a turn of this runner ended (or
	// parked) meanwhile, and read again if so.
	ends [64]uint64
	// recovering are the passes of Recover under way: each learns the
	// conversations whose turn of this runner ended or parked during it.
	recovering []*endWatch
	held       map[string]int        // conversations whose queued sends must not start now (being deleted)
	timers     map[string]*waitTimer // armed approval timeouts by conversation id (approval.go)
	// elicits are the elicitations a tool call of this runner waits for,
	// by request id: where an answer goes (elicit.go).
	elicits map[string]*elicitWait
	endCh   chan struct{}  // closed (and cleared) when a turn leaves turns (endSignal, delegate.go)
	closed  bool           // Close was called: no turn starts any more
	quit    chan struct{}  // closed by Close: background work (titles) stops
	wg      sync.WaitGroup // running turn goroutines

	// hooks stop a turn at one side of a race, for tests (export_test.go);
	// nil otherwise.
	hooks struct {
		parked      func(id string) // the goroutine that parked a round has not exited yet
		resumeWaits func(id string) // a resume waits for that goroutine to exit
		resumeRead  func(id string) // a resume has read the conversation and its round, not yet locked
		sendRead    func(id string) // a send has read the conversation, not yet locked
		interrupt   func(id string) // an interrupt has found the turn it stops
		recoverRead func()          // Recover has read the orphaned turns, not yet checked them
	}
}

// NewRunner makes a Runner. Call Recover once before serving.
func NewRunner(cfg Config) *Runner {
	if cfg.MaxAnswerBytes <= 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = DefaultSystemPrompt
	}
	if cfg.Agents == nil {
		cfg.Agents = &memAgentStore{}
	}
	if cfg.Projects == nil {
		cfg.Projects = NewProjectIndex()
	}
	if cfg.NoMemory {
		cfg.Memory = nil
	}
	if cfg.Unavailable == "" {
		cfg.Unavailable = "no model is configured: set OPENAI_BASE_URL (and OPENAI_MODEL) for an OpenAI-compatible server, or OPENAI_API_KEY for OpenAI, or run Ollama on 127.0.0.1:11434, then restart agentik"
	}
	r := &Runner{cfg: cfg, log: cfg.Logger, now: cfg.Now, afterFunc: cfg.AfterFunc, turns: map[string]*turn{}, held: map[string]int{}, timers: map[string]*waitTimer{}, est: newEstimator(), windows: cfg.Windows, quit: make(chan struct{})}
	if cfg.Catalog != nil {
		r.startDefault = cfg.Catalog.Default()
	}
	if r.windows == nil {
		r.windows = &memWindows{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.afterFunc == nil {
		r.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	r.temps = cfg.Temps
	return r
}

// ModelConfigured reports whether sends can reach a model.
func (r *Runner) ModelConfigured() bool {
	if r.cfg.Model == nil {
		return false
	}
	if r.cfg.Configured != nil { // a model the admin panel changes (llm.Live)
		return r.cfg.Configured()
	}
	return true
}

// SystemPrompt is the server's system prompt (Config.SystemPrompt, else
// DefaultSystemPrompt): what a conversation gets whose agent has no
// instructions and that sets none of its own.
func (r *Runner) SystemPrompt() string {
	if v := r.cfg.Site.Values().SystemPrompt; v != "" { // the admin panel's (site.go)
		return v
	}
	return r.cfg.SystemPrompt
}

// Close refuses new turns from now on (a send gets unavailable), lets the
// running turns finish for up to Config.DrainTimeout, then stops the rest
// and waits for them, or for ctx. A stopped turn of a stored conversation
// writes nothing more (frozen): it stays running in the store, as if the
// process had died there, and the next start, or another instance at its
// next Recover, continues it. Temp conversations, which do not outlive the
// process, and every turn when continuations are off, end as interrupted
// instead (their partial answer persisted).
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		close(r.quit)
	}
	r.closed = true
	for id, w := range r.timers {
		w.stop() // one that fired already sees closed
		delete(r.timers, id)
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	if d := r.cfg.DrainTimeout; d > 0 {
		drain, stop := context.WithTimeout(ctx, d)
		select {
		case <-done:
		case <-drain.Done():
		}
		stop()
	}
	r.mu.Lock()
	freeze := r.continuations() > 0
	for _, t := range r.turns {
		if freeze && !t.conv.Temp {
			t.frozen.Store(true)
		}
		t.cancel(errShutdown)
	}
	r.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close runner: %w", ctx.Err())
	}
}

// storeOf is the store that keeps conversation id: the temp store or the
// database.
func (r *Runner) storeOf(id string) Store {
	if r.IsTemp(id) {
		return r.temps
	}
	return r.cfg.Store
}

// branchesOf is the tree of conversation id's store: the temp store's
// for a temp conversation, else Config.Branches; nil when that store
// keeps no tree.
func (r *Runner) branchesOf(id string) Brancher {
	if r.IsTemp(id) {
		return r.temps
	}
	return r.cfg.Branches
}

// elicitsOf is the elicitations of conversation id's store, as
// branchesOf; nil when that store keeps none.
func (r *Runner) elicitsOf(id string) ElicitStore {
	if r.IsTemp(id) {
		return r.temps
	}
	return r.cfg.Elicits
}

// Temps is the store of temp conversations (Config.Temps; may be nil).
func (r *Runner) Temps() TempStore { return r.temps }

// tempStore is where a new temp conversation goes, or unavailable when
// the runner keeps none.
func (r *Runner) tempStore() (Store, error) {
	if r.temps == nil {
		return nil, Errorf(CodeUnavailable, "this server keeps no temp conversations")
	}
	return r.temps, nil
}

// conversation returns one conversation, with its live turn state, if
// ctx's principal may read it (Conversations.Get).
func (r *Runner) conversation(ctx context.Context, id string) (Conversation, error) {
	c, err := r.storeOf(id).Conversation(ctx, id)
	if err == nil {
		if scope := Scope(ctx); scope != "" {
			err = r.allowed(scope, c, levelRead)
		}
	}
	if err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// IsTemp reports whether id is a temp conversation; it reads no database.
func (r *Runner) IsTemp(id string) bool { return r.temps != nil && r.temps.Has(id) }

// messages returns a page of a conversation's history (history without
// where the next page starts).
func (r *Runner) messages(ctx context.Context, q MessageQuery) ([]Message, error) {
	p, err := r.history(ctx, q)
	return p.Messages, err
}

// Delete deletes a conversation with its history, interrupting its turn
// first.
func (r *Runner) Delete(ctx context.Context, id string) error {
	if err := r.ownAccess(ctx, id); err != nil {
		return err
	}
	st := r.storeOf(id)
	if _, err := st.Conversation(ctx, id); err != nil {
		return err
	}
	defer r.hold(id)() // the interrupted turn's end starts no queued send
	if _, err := r.Interrupt(ctx, id); err != nil {
		return err
	}
	rec := &Record{Event: r.agentEvent(AgentEvent{Type: AgentDeleted, ConversationID: id})}
	if err := st.Append(ctx, rec); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	r.est.forget(id)
	r.forgetKnowledge(ctx, id) // knowledge.go
	return nil
}

// remoteInterruptPoll is how often Interrupt checks whether a turn running
// on another instance has ended.
const remoteInterruptPoll = 25 * time.Millisecond

// Interrupt stops the conversation's running turn and waits until it has
// ended (its partial answer persisted). It reports whether a turn was
// running. A turn running on another instance (several instances on one
// PostgreSQL) is asked to stop through the store.
func (r *Runner) Interrupt(ctx context.Context, id string) (bool, error) {
	if err := r.access(ctx, id); err != nil {
		return false, err
	}
	c, err := r.conversation(ctx, id)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	t := r.turns[id]
	ending := t != nil && t.ending
	r.mu.Unlock()
	if h := r.hooks.interrupt; h != nil && t != nil {
		h(id)
	}
	if t == nil && c.Running && len(c.Waiting) > 0 {
		if ok, err := r.endWaiting(ctx, c); ok || err != nil {
			return ok, err
		}
		r.mu.Lock() // resumed meanwhile: interrupt it as it runs
		t = r.turns[id]
		ending = t != nil && t.ending
		r.mu.Unlock()
	}
	if t == nil {
		if !c.Running || c.Temp || r.cfg.Cluster == nil {
			return false, nil
		}
		return r.interruptRemote(ctx, id)
	}
	if !ending {
		t.cancel(errInterrupt)
	}
	select {
	case <-t.done:
		// A turn that parked to wait for approvals meanwhile is ended here.
		if w, err := r.conversation(ctx, id); err == nil && w.Running && len(w.Waiting) > 0 {
			return r.endWaiting(ctx, w)
		}
		// A turn already writing its end (a client may have seen it) was
		// not interrupted: it finished.
		return !ending, nil
	case <-ctx.Done():
		return !ending, ctx.Err()
	}
}

// interruptRemote asks the instance running id's turn to stop it and waits
// until the store shows it ended.
func (r *Runner) interruptRemote(ctx context.Context, id string) (bool, error) {
	asked, err := r.cfg.Cluster.RequestInterrupt(ctx, id)
	if err != nil || !asked {
		return false, err
	}
	tick := time.NewTicker(remoteInterruptPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-tick.C:
		}
		c, err := r.cfg.Store.Conversation(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return true, err
		}
		if !c.Running {
			return true, nil
		}
	}
}

// CancelTurn stops the conversation's turn if it runs here, without
// waiting: what another instance's interrupt request does.
func (r *Runner) CancelTurn(id string) {
	r.mu.Lock()
	t := r.turns[id]
	r.mu.Unlock()
	if t != nil {
		t.cancel(errInterrupt)
	}
}

// SendResult is what Start answers.
type SendResult struct {
	ConversationID string
	Created        bool // Start made the conversation (StartInput.New)
	MessageID      string
	Seq            int64 // seq of the user message's event: the turn's first event (0 for temp)
	Duplicate      bool  // the client_id was used before; nothing was started
	Queued         bool  // the send waits in the queue (see SendBusy)
	Position       int   // of a queued send: 1 = runs next
}

// busyWaiting is the busy error of a send to a conversation whose turn
// waits for approval of n tool calls.
func busyWaiting(id string, n int) error {
	return Errorf(CodeBusy, "the turn in conversation %s waits for approval of %d tool call(s): approve or deny them, or interrupt the turn (or send with on_busy \"queue\")", id, n)
}

// send starts a turn with new input: a user message, or the results of
// client-side tool calls (completion.go).
func (r *Runner) send(ctx context.Context, id string, in turnInput) (SendResult, error) {
	content, clientID := in.content, in.clientID
	if len(clientID) > 200 {
		return SendResult{}, Errorf(CodeBadRequest, "client_id is %d bytes long; at most 200 are allowed", len(clientID))
	}
	st := r.storeOf(id)
	ends := r.endsOf(id) // before the read: a turn ending after it moves it
	var c Conversation
	var err error
	if nw := in.create; nw != nil {
		st, c = nw.st, nw.conv // written with the turn's first records (start.go)
	} else if c, err = st.Conversation(ctx, id); err != nil {
		return SendResult{}, err
	}
	if h := r.hooks.sendRead; h != nil {
		h(id)
	}
	by := r.sentBy(ctx, c)                                                          // actas.go
	if err := r.mayRunFor(ctx, OwnerOf(c), cmp.Or(by.ID, OwnerOf(c))); err != nil { // standing.go
		return SendResult{}, err
	}
	if err := r.checkVision(c, content); err != nil {
		return SendResult{}, err
	}
	if clientID != "" && in.create == nil {
		if m, ok, err := messageByClientID(ctx, st, id, clientID); err != nil {
			return SendResult{}, err
		} else if ok {
			return SendResult{ConversationID: id, MessageID: m.ID, Seq: m.Seq, Duplicate: true}, nil
		}
	}
	if !r.ModelConfigured() {
		return SendResult{}, Errorf(CodeUnavailable, "%s", r.cfg.Unavailable)
	}

	// The slot (slot.go) takes the conversation; before that, this
	// runner's turn of it that is writing its end is waited out.
	var t *turn
	for t == nil {
		var prev *turn
		reread := false
		t, err = r.claim(ctx, st, c, turnOptions{clientID: clientID, prompt: content, clientTools: in.clientTools, knowledge: in.knowledge, format: in.format, choice: in.choice, app: in.app, traced: true, sentBy: by.ID}, func() error {
			switch {
			case r.ends[endStripe(id)] != ends:
				// A turn of this runner ended or parked its round since the
				// conversation was read: what it wrote decides, read again.
				ends, reread = r.ends[endStripe(id)], true
				return errAgain
			case c.Running && len(c.Waiting) > 0:
				// Parked: no goroutine runs it, but it is the conversation's turn.
				return busyWaiting(id, len(c.Waiting))
			case c.Running && !c.Temp && r.turns[id] == nil:
				return Errorf(CodeBusy, "a turn is running in conversation %s on another instance; wait for it to end", id)
			case r.turns[id] != nil:
				prev = r.turns[id]
				return errAgain
			}
			return nil
		})
		switch {
		case err == nil:
		case !errors.Is(err, errAgain):
			return SendResult{}, err
		case reread && in.create != nil: // nothing stored to read: the append decides
		case reread:
			if c, err = st.Conversation(ctx, id); err != nil {
				return SendResult{}, err
			}
		default:
			r.mu.Lock()
			ending := prev.ending
			r.mu.Unlock()
			if clientID != "" && prev.clientID == clientID {
				// A concurrent send of the same message: once its message is
				// written, this one is its duplicate, never busy.
				select {
				case <-prev.started:
				case <-ctx.Done():
					return SendResult{}, ctx.Err()
				}
				if m, ok, err := messageByClientID(ctx, st, id, clientID); err != nil {
					return SendResult{}, err
				} else if ok {
					return SendResult{ConversationID: id, MessageID: m.ID, Seq: m.Seq, Duplicate: true}, nil
				}
				ending = true // its message was not written: it is ending
			}
			if !ending {
				return SendResult{}, ErrTurnRunning(id)
			}
			// The previous turn is writing its end: a client that saw the end
			// may send at once, so wait the moment it takes instead of busy
			// (the loop then reads what it wrote: it may have parked).
			select {
			case <-prev.done:
			case <-ctx.Done():
				return SendResult{}, ctx.Err()
			}
		}
	}

	var recs []*Record
	if len(in.start) > 0 {
		recs = in.start
	} else if len(in.results) > 0 {
		recs = r.resultRecords(id, clientID, in.results)
	} else {
		user := Message{Type: MessageUser, ID: NewID(), ConversationID: id, Date: r.now(), Content: content, ClientID: clientID, SentBy: by.ID, SentByName: by.Name}
		mem := content
		if in.memory != nil {
			mem = in.memory
		}
		recs = []*Record{r.messageRecord(user, ModelMessage{Role: RoleUser, Content: mem})}
	}
	rec := recs[0]
	recs = append(recs, &Record{Event: r.agentEvent(AgentEvent{Type: AgentTurnStarted, ConversationID: id})})
	var pre []*Record
	if in.create != nil {
		pre = in.create.recs
	}
	err = r.begin(ctx, t, pre, recs, func() {
		if c.Title != "" || c.MessageCount != 0 {
			return
		}
		// A temp conversation (a stateless /v1 request, a temporary chat)
		// keeps its first-line title: a model call for a title nobody
		// keeps is not worth its tokens.
		t.title = r.cfg.Titles == TitlesModel && !r.IsTemp(id)
		if title := autoTitle(content); title != "" {
			// A user's rename meanwhile wins: then this one is not written.
			rec := &Record{Event: r.agentEvent(AgentEvent{Type: AgentRenamed, ConversationID: id, Title: title}), AutoTitle: true}
			if terr := st.Append(ctx, rec); terr != nil && !errors.Is(terr, ErrUserTitled) {
				r.log.Warn("title_failed", "conversation_id", id, "err", terr)
			}
		}
	})
	if err != nil {
		if errors.Is(err, ErrBadRequest) && clientID != "" && in.create == nil {
			// Lost a race with a send of the same client_id.
			if m, ok, _ := messageByClientID(ctx, st, id, clientID); ok {
				return SendResult{ConversationID: id, MessageID: m.ID, Seq: m.Seq, Duplicate: true}, nil
			}
		}
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	if e := rec.Event.Event; e != nil && e.Message != nil {
		in.messageID = e.Message.ID
	}
	if by.ID != "" && len(in.start) == 0 && len(in.results) == 0 {
		r.auditAdminWrite(ctx, c, in.messageID)
	}
	return SendResult{ConversationID: id, MessageID: in.messageID, Seq: rec.Event.Seq}, nil
}

// startRecords start a turn with the user's message: the message (marking
// the conversation running) and turn_started. (A queued send is never a
// conversation's first message, so it never titles one.)
func (r *Runner) startRecords(ctx context.Context, c Conversation, user Message) []*Record {
	mem, _ := r.modelContent(ctx, c.ID, user.Content, false) // resources.go: never fails when not strict
	rec := r.messageRecord(user, ModelMessage{Role: RoleUser, Content: mem})
	return []*Record{rec, {Event: r.agentEvent(AgentEvent{Type: AgentTurnStarted, ConversationID: c.ID})}}
}

func messageByClientID(ctx context.Context, st Store, id, clientID string) (Message, bool, error) {
	m, err := st.MessageByClientID(ctx, id, clientID)
	if errors.Is(err, ErrNotFound) {
		return Message{}, false, nil
	}
	if err != nil {
		return Message{}, false, fmt.Errorf("send: %w", err)
	}
	return m, true, nil
}

// endTurn forgets a turn once it has written its last record.
func (r *Runner) endTurn(t *turn) {
	r.forget(t)
	r.wg.Done()
}

// endStripe is the stripe of r.ends that counts id's turns.
func endStripe(id string) int {
	h := fnv.New32a()
	_, _ = io.WriteString(h, id)
	return int(h.Sum32() % 64)
}

// endsOf reads id's stripe of r.ends.
func (r *Runner) endsOf(id string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ends[endStripe(id)]
}

// forget removes a turn from the registry and marks it done; the caller
// then releases its place in r.wg.
func (r *Runner) forget(t *turn) {
	r.mu.Lock()
	if r.turns[t.conv.ID] == t {
		delete(r.turns, t.conv.ID)
		r.ends[endStripe(t.conv.ID)]++
		for _, w := range r.recovering {
			w.ended[t.conv.ID] = true
		}
	}
	if r.endCh != nil {
		close(r.endCh)
		r.endCh = nil
	}
	r.mu.Unlock()
	t.ended()
	close(t.done)
}
