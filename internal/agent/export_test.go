package agent

import "context"

// SetRaceHooks makes r call parked when a turn's goroutine has parked its
// round for approval but not exited yet, and resumeWaits when a resume
// waits for such a goroutine to exit. Set them before the turn starts.
func SetRaceHooks(r *Runner, parked, resumeWaits func(id string)) {
	r.hooks.parked, r.hooks.resumeWaits = parked, resumeWaits
}

// SetSendHook makes r call read when a send has read the conversation and
// not yet taken the runner's lock. Set it before the sends.
func SetSendHook(r *Runner, read func(id string)) { r.hooks.sendRead = read }

// SetInterruptHook makes r call found when an interrupt has found the
// running turn it stops. Set it before the interrupt.
func SetInterruptHook(r *Runner, found func(id string)) { r.hooks.interrupt = found }

// Await waits until cond holds of conversation id, re-reading it each time
// a turn of r ends or parks (endSignal), or ctx ends.
func Await(ctx context.Context, r *Runner, id string, cond func(Conversation) bool) (Conversation, error) {
	for {
		sig := r.endSignal()
		c, err := r.Conversation(context.WithoutCancel(ctx), id)
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

// SetExtractor makes fs extract with e. Set it before fs runs.
func SetExtractor(fs *Files, e Extractor) { fs.cfg.Extractor = e }
