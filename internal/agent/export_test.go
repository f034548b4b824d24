package agent

import "context"

// SetRaceHooks makes r call parked when a turn's goroutine has parked its
// round for approval but not exited yet, and resumeWaits when a resume
// waits for such a goroutine to exit. Set them before the turn starts.
func SetRaceHooks(r *Runner, parked, resumeWaits func(id string)) {
	r.hooks.parked, r.hooks.resumeWaits = parked, resumeWaits
}

// SetResumeHook makes r call read when a resume has read the
// conversation and its decided round, and not yet taken the runner's lock.
func SetResumeHook(r *Runner, read func(id string)) { r.hooks.resumeRead = read }

// SetSendHook makes r call read when a send has read the conversation and
// not yet taken the runner's lock. Set it before the sends.
func SetSendHook(r *Runner, read func(id string)) { r.hooks.sendRead = read }

// SetInterruptHook makes r call found when an interrupt has found the
// running turn it stops. Set it before the interrupt.
func SetInterruptHook(r *Runner, found func(id string)) { r.hooks.interrupt = found }

// SetRecoverHook makes r call read when Recover has read the orphaned
// turns and not yet checked them against its own. Set it before Recover.
func SetRecoverHook(r *Runner, read func()) { r.hooks.recoverRead = read }

// AwaitForgotten waits until no turn of r holds conversation id (its
// goroutine has ended or parked), or ctx ends.
func AwaitForgotten(ctx context.Context, r *Runner, id string) error {
	for {
		sig := r.endSignal()
		r.mu.Lock()
		live := r.turns[id] != nil
		r.mu.Unlock()
		if !live {
			return nil
		}
		select {
		case <-sig:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Await waits until cond holds of conversation id, re-reading it each time
// a turn of r ends or parks (endSignal), or ctx ends.
func Await(ctx context.Context, r *Runner, id string, cond func(Conversation) bool) (Conversation, error) {
	for {
		sig := r.endSignal()
		c, err := r.conversation(context.WithoutCancel(ctx), id)
		if err != nil || cond(c) {
			return c, err
		}
		select {
		case <-sig:
		case <-ctx.Done():
			return c, context.Cause(ctx)
		}
	}
}

// Walks counts the calendar walks s made for its schedules' next slots
// (schedule.go's next, on a miss of what it kept).
func Walks(s *Scheduler) int {
	s.nextMu.Lock()
	defer s.nextMu.Unlock()
	return s.walks
}

// ChunksOf is fs.chunksOf: f's chunks, as a send inlining f reads them.
func ChunksOf(ctx context.Context, fs *Files, f File) ([]Chunk, error) { return fs.chunksOf(ctx, f) }

// SetExtractor makes fs extract with e. Set it before fs runs.
func SetExtractor(fs *Files, e Extractor) { fs.cfg.Extractor = e }

// ServicesOf makes the services of the nouns over r's own stores, as
// app.Wire does over the database, for the tests that make a Runner
// themselves.
func ServicesOf(r *Runner) (*Conversations, *Agents, *Memory) {
	cfg := ConversationsConfig{Runner: r}
	cfg.Lister, _ = r.cfg.Store.(OwnerLister)
	if cfg.Lister == nil {
		cfg.Lister = noLister{}
	}
	cfg.Versions, _ = r.cfg.Store.(Versioned)
	cfg.Sources, _ = r.cfg.Store.(Sources)
	cfg.Search, _ = r.cfg.Store.(Searcher)
	cs, err := NewConversations(cfg)
	if err != nil {
		panic(err)
	}
	as, err := NewAgents(AgentsConfig{Runner: r, Store: r.cfg.Agents, Audit: r.cfg.Audit})
	if err != nil {
		panic(err)
	}
	ms, err := NewMemory(r, r.cfg.Memory)
	if err != nil {
		panic(err)
	}
	return cs, as, ms
}

// noLister is the OwnerLister of a test's store that has none.
type noLister struct{}

func (noLister) ConversationsOf(context.Context, string, []string, int, int) ([]Conversation, int, error) {
	return nil, 0, Errorf(CodeUnavailable, "the test's store lists no owner's conversations")
}
